#include "runtime/worker_pool.hpp"

#include <algorithm>
#include <pthread.h>
#include <system_error>
#include <thread>
#include <unistd.h>

#include "runtime/core_moves.hpp"
#include "runtime/waiting.hpp"
#include "tuning.hpp"

namespace rnngraph::runtime {

namespace {
std::mutex& creation_mutex() {
  static std::mutex m;
  return m;
}
// fork: a child never inherits the creation mutex locked (held across the fork).
void lock_before_fork() { creation_mutex().lock(); }
void unlock_after_fork() { creation_mutex().unlock(); }
[[maybe_unused]] const int fork_handlers =
    pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork);
}  // namespace

WorkerPool& WorkerPool::instance() {
  std::lock_guard<std::mutex> lock(creation_mutex());
  static WorkerPool* pool = nullptr;
  static pid_t pool_pid = 0;
  if (!pool || pool_pid != getpid()) {
    pool = new WorkerPool;  // never destroyed: workers sleep in it until the process ends
    pool_pid = getpid();
  }
  return *pool;
}

void WorkerPool::offer(const std::shared_ptr<Job>& job, int helpers) {
  std::vector<Bed*> to_wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (static_cast<int>(beds_.size()) < helpers) {
      auto bed = std::make_unique<Bed>();
      try {
        std::thread(&WorkerPool::work, this, static_cast<int>(beds_.size()), bed.get()).detach();
      } catch (const std::system_error&) {
        break;  // the caller and the workers there are finish the job
      }
      beds_.push_back(std::move(bed));
    }
    open_.push_back(job);
    posted_.fetch_add(1, std::memory_order_release);
    // Workers watching for an offer join without a wake-up; sleepers are woken only for the
    // helpers they cannot provide (spares sleep, see work()). A watcher that stops watching
    // meanwhile still sees this offer: posted_ changed before it takes the lock to sleep.
    const int watching = watching_.load(std::memory_order_acquire);
    to_wake = sleepers_to_wake_locked(helpers, std::max(0, helpers - watching));
  }
  // Outside the lock, so that a woken worker does not block on it at once. Beds live as
  // long as the pool.
  for (Bed* bed : to_wake) bed->wake.notify_one();
}

// Up to `count` sleeping workers for a job with `helpers` worker slots, marked awake: first
// those whose home slot (index + 1) the job has, so that each works on its own share again,
// then any others (a home worker busy in another call leaves its slot to them).
std::vector<WorkerPool::Bed*> WorkerPool::sleepers_to_wake_locked(int helpers, int count) {
  std::vector<Bed*> chosen;
  auto choose = [&](Bed& bed) {
    if (static_cast<int>(chosen.size()) >= count || !bed.asleep) return;
    bed.asleep = false;  // chosen once even if a second offer comes before it runs
    chosen.push_back(&bed);
  };
  const int beds = static_cast<int>(beds_.size()), home_beds = std::min(helpers, beds);
  for (int i = 0; i < home_beds; ++i) choose(*beds_[static_cast<size_t>(i)]);
  for (int i = home_beds; i < beds; ++i) choose(*beds_[static_cast<size_t>(i)]);
  return chosen;
}

void WorkerPool::withdraw(const Job* job) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [&](const std::shared_ptr<Job>& j) { return j.get() == job; }),
              open_.end());
}

int WorkerPool::workers() {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(beds_.size());
}

std::shared_ptr<Job> WorkerPool::open_job_locked() const {
  for (const auto& job : open_) {
    if (job->wants_helpers()) return job;
  }
  return nullptr;
}

// A worker: joins open jobs; with none open, it watches for the next offer for a while (the
// parallel sections of one call come back to back), then sleeps until one comes. Worker
// `index` takes slot index + 1 of every job (Job::join); in a job whose team has no such
// slot, it is a spare, and leaves the free slots to their own workers for a moment first.
// A worker that found no slot in the last job it saw sleeps at once instead of watching
// (tuning::kWorkerSpinUs): the next job is likely as small, and spares that watch slow the
// team down (16 threads, a team of 6: the call 1.5x slower).
void WorkerPool::work(int index, Bed* bed) {
  mark_own_worker();
  const int home = index + 1;
  bool spare = false;  // no slot for this worker in the last job it saw
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        const unsigned seen = posted_.load(std::memory_order_acquire);
        if ((job = open_job_locked())) break;
        lock.unlock();
        const long spin = spare ? 0 : tuning::kWorkerSpinUs;
        watching_.fetch_add(1, std::memory_order_acq_rel);
        const bool posted =
            spin_until([&] { return posted_.load(std::memory_order_acquire) != seen; }, spin);
        watching_.fetch_sub(1, std::memory_order_acq_rel);
        lock.lock();
        if (!posted) {
          bed->asleep = true;
          bed->wake.wait(lock, [&] { return posted_.load(std::memory_order_acquire) != seen; });
          bed->asleep = false;
        }
      }
    }
    if (home >= job->team()) {
      spin_until([&] { return !job->wants_helpers(); }, tuning::kSpareJoinUs);
    }
    const int slot = job->join(home);
    spare = slot <= 0;
    if (slot > 0) job->work(slot);
  }
}

}  // namespace rnngraph::runtime
