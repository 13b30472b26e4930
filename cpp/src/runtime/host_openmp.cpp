#include "runtime/host_openmp.hpp"

#include <algorithm>
#include <atomic>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <unistd.h>
#include <vector>

#include "rnngraph/threads.hpp"
#include "runtime/thread_state.hpp"
#include "runtime/waiting.hpp"
#include "tuning.hpp"

namespace rnngraph {

namespace {

// The OpenMP ABI both libgomp and LLVM/Intel's libomp export.
using ParallelFn = void (*)(void (*)(void*), void*, unsigned, unsigned);
using ThreadNumFn = int (*)();

struct HostPool {
  std::string path;
  ParallelFn parallel = nullptr;
  ThreadNumFn thread_num = nullptr;
  ThreadNumFn max_threads = nullptr;  // omp_get_max_threads: the host's own team size
  int cpus = 1;                       // CPUs in the affinity mask when adopted
  pid_t pid = 0;
  // Whether the pool keeps stalling (tuning::kHostPoolStallUs): one bit per recent region,
  // set if it stalled. When kHostPoolStalls of the last kHostPoolRegions stalled, jobs rest
  // on rnngraph's own workers until `resting_until_us`.
  mutable std::atomic<std::uint32_t> recent{0};
  mutable std::atomic<long long> resting_until_us{0};
  mutable std::atomic<long long> stalled_regions{0}, rests{0};  // for measurements

  void record(long long now, long long overhead_us) const;
};

std::atomic<bool> fall_back{true};  // off only for measurements (set_host_pool_fall_back)

void HostPool::record(long long now, long long overhead_us) const {
  const bool stalled = overhead_us > tuning::kHostPoolStallUs;
  if (stalled) stalled_regions.fetch_add(1, std::memory_order_relaxed);
  constexpr std::uint32_t window = (1u << tuning::kHostPoolRegions) - 1;
  std::uint32_t seen = recent.load(std::memory_order_relaxed), next = 0;
  do {
    next = ((seen << 1) | std::uint32_t(stalled)) & window;
  } while (!recent.compare_exchange_weak(seen, next, std::memory_order_relaxed));
  if (__builtin_popcount(next) < tuning::kHostPoolStalls ||
      !fall_back.load(std::memory_order_relaxed))
    return;
  recent.store(0, std::memory_order_relaxed);
  resting_until_us.store(now + tuning::kHostPoolRestUs, std::memory_order_relaxed);
  rests.fetch_add(1, std::memory_order_relaxed);
}

std::mutex adopt_mutex;
// Every pool looked up, kept for the process's life (a job may still run on one while another
// is adopted) and reused when the same library is adopted again: one per library and process.
// Never destroyed, not even at exit: `adopted` may point into it while static objects are
// destroyed, and a job may still run on one of its pools.
std::vector<std::unique_ptr<HostPool>>& known = *new std::vector<std::unique_ptr<HostPool>>;
std::atomic<const HostPool*> adopted{nullptr};

struct Team {
  runtime::Job* job;
  ThreadNumFn thread_num;
  long long entered_us = 0, left_us = 0;  // when the caller entered and left its part
};

void run_member(void* data) {
  auto* team = static_cast<Team*>(data);
  const int slot = team->thread_num();
  if (slot == 0) team->entered_us = runtime::now_us();
  try {
    team->job->work(slot);
  } catch (...) {  // Job::work records its items' errors; nothing may leave an OpenMP region
  }
  if (slot == 0) team->left_us = runtime::now_us();
}

}  // namespace

bool use_host_openmp(const std::string& library) {
  std::lock_guard<std::mutex> lock(adopt_mutex);
  if (library.empty()) {
    adopted.store(nullptr, std::memory_order_release);
    return true;
  }
  for (const auto& pool : known) {
    if (pool->path == library && pool->pid == getpid()) {
      adopted.store(pool.get(), std::memory_order_release);
      return true;
    }
  }
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);  // only if already loaded
  if (!handle) return false;
  auto pool = std::make_unique<HostPool>();
  pool->path = library;
  pool->parallel = reinterpret_cast<ParallelFn>(dlsym(handle, "GOMP_parallel"));
  pool->thread_num = reinterpret_cast<ThreadNumFn>(dlsym(handle, "omp_get_thread_num"));
  pool->max_threads = reinterpret_cast<ThreadNumFn>(dlsym(handle, "omp_get_max_threads"));
  pool->cpus = std::max(1, cpu_budget().affinity);
  pool->pid = getpid();
  dlclose(handle);  // the host keeps it loaded
  if (!pool->parallel || !pool->thread_num || !pool->max_threads) return false;
  adopted.store(pool.get(), std::memory_order_release);
  known.push_back(std::move(pool));
  return true;
}

void set_host_pool_fall_back(bool on) { fall_back.store(on, std::memory_order_relaxed); }

std::pair<long long, long long> host_pool_stalls() {
  const HostPool* pool = adopted.load(std::memory_order_acquire);
  if (!pool) return {0, 0};
  return {pool->stalled_regions.load(std::memory_order_relaxed),
          pool->rests.load(std::memory_order_relaxed)};
}

std::string host_openmp() {
  const HostPool* pool = adopted.load(std::memory_order_acquire);
  return pool ? pool->path : std::string();
}

namespace runtime {

bool run_on_host_openmp(Job& job, int team) {
  const HostPool* pool = adopted.load(std::memory_order_acquire);
  if (!pool || pool->pid != getpid()) return false;
  const long long start = now_us();
  if (start < pool->resting_until_us.load(std::memory_order_relaxed)) return false;
  // libgomp ends the process when it cannot start a thread (a thread or memory limit: "Thread
  // creation failed"), and a team larger than both the CPUs and the host's team size (from a
  // thread other than the one torch.set_num_threads ran on: OMP_NUM_THREADS or the CPUs) is
  // one a limit may stop. rnngraph's own workers run it instead: they start what they can and
  // share the job among the threads there are. (This narrows the risk, it cannot remove it:
  // libgomp keeps a pool per calling thread, so a first region from a new thread starts its
  // team even within the cap.)
  if (team > std::max(pool->cpus, pool->max_threads())) return false;
  Team members{&job, pool->thread_num};
  {
    UnflushedScope unflushed;  // for the threads libgomp may start here (each member runs
                               // the job under the job's own state: Job::work)
    pool->parallel(run_member, &members, static_cast<unsigned>(team), 0);
  }
  // The time the region's own start and end took, outside the job.
  const long long end = now_us();
  pool->record(end, (members.entered_us - start) + (end - members.left_us));
  return true;
}

}  // namespace runtime
}  // namespace rnngraph
