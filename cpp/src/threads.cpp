#include "parallel.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <pthread.h>
#include <unistd.h>
#include <vector>
#include <thread>
#include <stdexcept>
#include <string>
#include <system_error>

#include <cblas.h>
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define RNNGRAPH_X86 1
#endif

#ifdef RNNGRAPH_SCIPY_OPENBLAS
#define RNNGRAPH_OPENBLAS(name) scipy_openblas_##name
static const char* const kLibrary = "scipy-openblas32";
#else
#define RNNGRAPH_OPENBLAS(name) openblas_##name
static const char* const kLibrary = "openblas";
#endif

namespace rnngraph {

namespace {

// A worker thread that cannot be started: a memory error (its stack is what is missing,
// under an address-space limit), whose message says which.
class ThreadStartError : public std::bad_alloc {
 public:
  ThreadStartError(int index, const char* why)
      : message_("could not start worker thread " + std::to_string(index) + " (" + why + ")") {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

std::mutex thread_mutex;
int requested_threads = -1;  // rnngraph's threads; OpenBLAS's own pool is kept at 1
thread_local bool parallel_part = false;

int requested_locked() {
  // OpenBLAS starts with one thread per core: that is rnngraph's default. The BLAS itself is
  // kept single-threaded (this OpenBLAS copy is private to rnngraph); checked on every call,
  // since OpenBLAS resets its count in a forked child.
  if (requested_threads < 0) requested_threads = RNNGRAPH_OPENBLAS(get_num_threads)();
  if (RNNGRAPH_OPENBLAS(get_num_threads)() != 1) RNNGRAPH_OPENBLAS(set_num_threads)(1);
  return requested_threads;
}
}  // namespace

BlasInfo blas_info() {
  get_num_threads();  // the BLAS is pinned to one thread from the first use on
  BlasInfo info;
  info.library = kLibrary;
  info.config = RNNGRAPH_OPENBLAS(get_config)();
  info.core = RNNGRAPH_OPENBLAS(get_corename)();
  info.num_threads = RNNGRAPH_OPENBLAS(get_num_threads)();
  return info;
}

void set_num_threads(int n) {
  if (n < 1)
    throw std::invalid_argument("set_num_threads: n must be >= 1, got " + std::to_string(n));
  std::lock_guard<std::mutex> lock(thread_mutex);
  requested_locked();
  requested_threads = n;
}

int get_num_threads() {
  std::lock_guard<std::mutex> lock(thread_mutex);
  return requested_locked();
}

bool in_parallel_part() { return parallel_part; }

int threads_for(std::int64_t work, tuning::ParallelSite site, std::int64_t parts) {
  if (work < tuning::parallel_threshold(site) || parts <= 1 || in_parallel_part()) return 1;
  return static_cast<int>(std::min<std::int64_t>(get_num_threads(), parts));
}

void SpinBarrier::wait() {
  const unsigned generation = generation_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    return;
  }
  for (long spins = 0; generation_.load(std::memory_order_acquire) == generation; ++spins) {
#ifdef RNNGRAPH_X86
    _mm_pause();
#endif
    if (spins > tuning::kBarrierSpins) std::this_thread::yield();
  }
}

ParallelPartScope::ParallelPartScope() : saved_(parallel_part) { parallel_part = true; }
ParallelPartScope::~ParallelPartScope() { parallel_part = saved_; }

namespace {

// Resident worker threads. They are detached and never destroyed (a process exits with them
// asleep). A forked child inherits none of them, and its copies of the pool's mutex and
// condition variables still count the parent's sleeping workers, so it starts a pool of its own.
class WorkerPool {
 public:
  // This process's pool. A forked child inherits none of the parent's workers, and its
  // copies of the parent pool's mutexes and condition variables still count them, so it
  // starts a pool of its own (the parent's is left behind on purpose). The creation mutex
  // is held across fork (pthread_atfork below), so a child never inherits it locked.
  static WorkerPool& instance() {
    std::lock_guard<std::mutex> lock(creation_mutex());
    static WorkerPool* pool = nullptr;
    static pid_t pool_pid = 0;
    if (!pool || pool_pid != getpid()) {
      pool = new WorkerPool;
      pool_pid = getpid();
    }
    return *pool;
  }
  static std::mutex& creation_mutex() {
    static std::mutex m;
    return m;
  }

  // Runs job(1) .. job(count - 1) on workers while the caller runs job(0); false if the pool
  // is busy with another call.
  bool run(int count, const std::function<void(int)>& job) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Every worker the job needs exists before it is published: a worker that cannot be
      // started (a thread or memory limit) fails this call, and is not counted, so the next
      // call starts it again.
      while (started_ < count - 1) {
        start_worker(started_ + 1);
        ++started_;
      }
      job_ = &job;
      count_ = count;
      pending_.store(count - 1, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    job(0);
    // The workers finish at about the same time as job(0): spin briefly before sleeping.
    for (long spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
      if (spins > tuning::kWorkerSpins) {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
        break;
      }
      pause();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = nullptr;
    return true;
  }

 private:
  void start_worker(int index) {
    try {
      std::thread(&WorkerPool::work, this, index, generation_.load()).detach();
    } catch (const std::system_error& e) {
      throw ThreadStartError(index, e.what());
    }
  }

  static void pause() {
#ifdef RNNGRAPH_X86
    _mm_pause();
#endif
  }

  void work(int index, unsigned seen) {
    for (;;) {
      for (long spins = 0;
           generation_.load(std::memory_order_acquire) == seen && spins < tuning::kWorkerSpins;
           ++spins) {
        pause();
      }
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      seen = generation_.load(std::memory_order_acquire);
      if (index >= count_) continue;
      const std::function<void(int)>* job = job_;
      lock.unlock();
      (*job)(index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        lock.lock();  // the caller may be about to sleep: notify under the lock
        done_.notify_one();
      }
    }
  }

  std::mutex busy_;   // one call at a time
  std::mutex mutex_;  // the fields below
  std::condition_variable wake_, done_;
  const std::function<void(int)>* job_ = nullptr;
  int count_ = 0, started_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<unsigned> generation_{0};
};

}  // namespace

void run_concurrently(int count, const std::function<void(int)>& job) {
  if (count < 2) {
    if (count == 1) job(0);
    return;
  }
  if (WorkerPool::instance().run(count, job)) return;
  // Another call holds the pool: threads of this call's own. Each waits for the go, given
  // only once all of them exist, since the jobs may meet at barriers.
  std::atomic<int> go{0};  // 1: run, -1: a thread could not be started
  std::vector<std::thread> threads;
  auto gated = [&](int i) {
    while (go.load(std::memory_order_acquire) == 0) std::this_thread::yield();
    if (go.load(std::memory_order_acquire) > 0) job(i);
  };
  try {
    for (int i = 1; i < count; ++i) threads.emplace_back(gated, i);
  } catch (const std::system_error& e) {
    go.store(-1, std::memory_order_release);
    for (auto& t : threads) t.join();
    throw ThreadStartError(static_cast<int>(threads.size()) + 1, e.what());
  }
  go.store(1, std::memory_order_release);
  job(0);
  for (auto& t : threads) t.join();
}

namespace {
// fork: the mutexes a forking thread could otherwise copy locked into the child (another
// thread inside get_num_threads or creating the pool) are held across the fork.
void lock_before_fork() {
  WorkerPool::creation_mutex().lock();
  thread_mutex.lock();
}
void unlock_after_fork() {
  thread_mutex.unlock();
  WorkerPool::creation_mutex().unlock();
}
[[maybe_unused]] const int fork_handlers =
    pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork);
}  // namespace

#ifdef RNNGRAPH_X86
// MXCSR bits: FTZ (flush-to-zero, 0x8000) and DAZ (denormals-are-zero, 0x0040).
FlushDenormals::FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
FlushDenormals::~FlushDenormals() { _mm_setcsr(saved_); }
#else
FlushDenormals::FlushDenormals() {}
FlushDenormals::~FlushDenormals() {}
#endif

}  // namespace rnngraph
