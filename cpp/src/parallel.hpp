// How rnngraph's kernels run work on its threads: run_parts, the rule for how many threads a
// piece of work gets, the per-step barrier, and the denormal flush every part runs under.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <vector>

#include "rnngraph/threads.hpp"
#include "tuning.hpp"

namespace rnngraph {

// Whether the calling thread is one of the threads of a run_parts call (its work must not
// start more threads).
bool in_parallel_part();

// How many threads a piece of `work` gets when it can be cut into `parts`: rnngraph's
// threads (at most `parts`) if the work reaches the site's threshold (tuning.hpp) and the
// caller is not already a thread of a run_parts call, else 1.
int threads_for(std::int64_t work, tuning::ParallelSite site, std::int64_t parts);

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

// Marks the calling thread as a part of a run_parts call while alive.
class ParallelPartScope {
 public:
  ParallelPartScope();
  ~ParallelPartScope();
  ParallelPartScope(const ParallelPartScope&) = delete;
  ParallelPartScope& operator=(const ParallelPartScope&) = delete;

 private:
  bool saved_;
};

// Run job(0) here and job(1) .. job(count - 1) at the same time on other threads: rnngraph's
// resident workers (started once, asleep between calls), or fresh threads if another call
// holds them. Returns when every job has returned.
void run_concurrently(int count, const std::function<void(int)>& job);

// Run body(0) .. body(count - 1): concurrently on `count` threads when `concurrent`, else in
// order here. An exception thrown by any body is rethrown in the caller.
template <class Body>
void run_parts(int count, bool concurrent, Body&& body) {
  if (!concurrent || count < 2) {
    for (int i = 0; i < count; ++i) body(i);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(count));
  auto guarded = [&](int i) {
    try {
      FlushDenormals flush;
      ParallelPartScope scope;
      body(i);
    } catch (...) {
      errors[static_cast<size_t>(i)] = std::current_exception();
    }
  };
  run_concurrently(count, guarded);
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace rnngraph
