// The linked BLAS (identity and thread control) and how a call spends its threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace rnngraph {

struct BlasInfo {
  std::string library;  // e.g. "scipy-openblas32"
  std::string config;   // OpenBLAS's own build string (version, DYNAMIC_ARCH, ...)
  std::string core;     // kernel family chosen at load time, e.g. "SkylakeX"
  int num_threads = 1;
};

// rnngraph owns its parallelism: the BLAS it links always runs single-threaded (its idle
// worker threads would otherwise spin on the cores our own threads need), and
// set_num_threads/get_num_threads set how many threads rnngraph's kernels use.
BlasInfo blas_info();
void set_num_threads(int n);
int get_num_threads();

// Whether the calling thread is one of the threads of a run_parts call (its work must not
// start more threads).
bool in_parallel_part();

// How many threads a piece of `work` gets when it can be cut into `parts`: rnngraph's
// threads (at most `parts`) if the work reaches `threshold` and the caller is not already a
// thread of a run_parts call, else 1.
int threads_for(std::int64_t work, std::int64_t threshold, std::int64_t parts);

// While alive, denormal floats are flushed to zero in this thread (FTZ/DAZ): sigmoid gates
// produce denormals that slow a CPU down many times over. NaN and Inf are unaffected.
class FlushDenormals {
 public:
  FlushDenormals();
  ~FlushDenormals();
  FlushDenormals(const FlushDenormals&) = delete;
  FlushDenormals& operator=(const FlushDenormals&) = delete;

 private:
  unsigned int saved_ = 0;
};

// A barrier for the `count` threads of one run_parts call that meet once per time step:
// they spin (the wait is a few hundred nanoseconds), then yield if it drags on.
class SpinBarrier {
 public:
  explicit SpinBarrier(int count) : count_(count) {}
  void wait();

 private:
  const int count_;
  std::atomic<int> arrived_{0};
  std::atomic<unsigned> generation_{0};
};

// Run body(0) .. body(count - 1): concurrently on `count` threads when `concurrent`, else in
// order here.
// An exception thrown by any body is rethrown in the caller.
template <class Body>
void run_parts(int count, bool concurrent, Body&& body);

}  // namespace rnngraph

#include "rnngraph/threads_impl.hpp"
