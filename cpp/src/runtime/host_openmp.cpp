#include "runtime/host_openmp.hpp"

#include <atomic>
#include <cmath>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <unistd.h>
#include <vector>

#include "rnngraph/threads.hpp"
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
  pid_t pid = 0;
};

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

// Whether the adopted pool keeps stalling (tuning::kHostPoolStallUs): a score that each
// stalled region raises by 1 and that halves every kHostPoolStallHalfLifeUs. While it is
// high, jobs rest on rnngraph's own workers for kHostPoolRestUs.
struct StallWatch {
  std::mutex mutex;
  double score = 0;
  long long scored_us = 0, resting_until_us = 0;

  bool resting(long long now) {
    std::lock_guard<std::mutex> lock(mutex);
    return now < resting_until_us;
  }
  void record(long long now, long long overhead_us) {
    if (overhead_us <= tuning::kHostPoolStallUs) return;
    std::lock_guard<std::mutex> lock(mutex);
    score = score * std::exp2(-double(now - scored_us) / tuning::kHostPoolStallHalfLifeUs) + 1;
    scored_us = now;
    if (score >= tuning::kHostPoolStallScore) {
      resting_until_us = now + tuning::kHostPoolRestUs;
      score = 0;
    }
  }
};
StallWatch& stall_watch = *new StallWatch;  // never destroyed, like `known`

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
  pool->pid = getpid();
  dlclose(handle);  // the host keeps it loaded
  if (!pool->parallel || !pool->thread_num) return false;
  adopted.store(pool.get(), std::memory_order_release);
  known.push_back(std::move(pool));
  return true;
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
  if (stall_watch.resting(start)) return false;
  Team members{&job, pool->thread_num};
  pool->parallel(run_member, &members, static_cast<unsigned>(team), 0);
  // The time the region's own start and end took, outside the job.
  const long long end = now_us();
  stall_watch.record(end, (members.entered_us - start) + (end - members.left_us));
  return true;
}

}  // namespace runtime
}  // namespace rnngraph
