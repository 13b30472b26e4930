#include "runtime/host_openmp.hpp"

#include <atomic>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <unistd.h>
#include <vector>

#include "rnngraph/threads.hpp"

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
};

void run_member(void* data) {
  const auto* team = static_cast<const Team*>(data);
  try {
    team->job->work(team->thread_num());
  } catch (...) {  // Job::work records its items' errors; nothing may leave an OpenMP region
  }
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
  Team members{&job, pool->thread_num};
  pool->parallel(run_member, &members, static_cast<unsigned>(team), 0);
  return true;
}

}  // namespace runtime
}  // namespace rnngraph
