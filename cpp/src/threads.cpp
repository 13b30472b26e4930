// How many threads rnngraph's kernels use: by default the CPUs this process may run on.
#include <algorithm>
#include <mutex>
#include <pthread.h>
#include <stdexcept>
#include <string>

#include <cblas.h>

#include "rnngraph/threads.hpp"

#ifdef RNNGRAPH_SCIPY_OPENBLAS
#define RNNGRAPH_OPENBLAS(name) scipy_openblas_##name
static const char* const kLibrary = "scipy-openblas32";
#else
#define RNNGRAPH_OPENBLAS(name) openblas_##name
static const char* const kLibrary = "openblas";
#endif

namespace rnngraph {

namespace {
std::mutex thread_mutex;
int requested_threads = -1;  // rnngraph's threads; OpenBLAS's own pool is kept at 1

int requested_locked() {
  if (requested_threads < 0) requested_threads = default_num_threads();
  return requested_threads;
}

// fork: a child never inherits the mutex locked by another thread (held across the fork).
void lock_before_fork() { thread_mutex.lock(); }
void unlock_after_fork() { thread_mutex.unlock(); }
[[maybe_unused]] const int fork_handlers =
    pthread_atfork(lock_before_fork, unlock_after_fork, unlock_after_fork);
}  // namespace

// The BLAS is kept single-threaded: this OpenBLAS copy is private to rnngraph and runs inside
// rnngraph's threads. Checked before every BLAS call (BlasCall, gemm.cpp): OpenBLAS resets its
// count in a forked child, and threadpoolctl lists this copy as a "blas" pool that a limit
// entered in another thread would set to n (one product summed by several threads: 44 of 50
// calls of an LSTM's gradients differed in their last bits under such a loop, before).
void pin_blas_threads() {
  if (RNNGRAPH_OPENBLAS(get_num_threads)() != 1) RNNGRAPH_OPENBLAS(set_num_threads)(1);
}

BlasInfo blas_info() {
  pin_blas_threads();  // (as every BLAS call does first: the count it reports is the one used)
  BlasInfo info;
  info.library = kLibrary;
  info.config = RNNGRAPH_OPENBLAS(get_config)();
  info.core = RNNGRAPH_OPENBLAS(get_corename)();
  info.num_threads = RNNGRAPH_OPENBLAS(get_num_threads)();
  return info;
}

void set_num_threads(int n) {
  if (n < 1 || n > kMaxThreads)
    throw std::invalid_argument("set_num_threads: expected 1 <= n <= " +
                                std::to_string(kMaxThreads) + ", got " + std::to_string(n));
  std::lock_guard<std::mutex> lock(thread_mutex);
  requested_locked();
  requested_threads = n;
}

int get_num_threads() {
  std::lock_guard<std::mutex> lock(thread_mutex);
  return requested_locked();
}

}  // namespace rnngraph

// For threadpoolctl (python/rnngraph/_threadpool.py finds rnngraph's module by these
// symbols and calls them through ctypes).
extern "C" __attribute__((visibility("default"))) int rnngraph_get_num_threads() {
  return rnngraph::get_num_threads();
}
// A limit is an upper bound: one past kMaxThreads is no limit, the most threads there are.
extern "C" __attribute__((visibility("default"))) void rnngraph_set_num_threads(int n) {
  rnngraph::set_num_threads(std::clamp(n, 1, rnngraph::kMaxThreads));
}
