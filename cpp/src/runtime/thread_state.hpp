// The state a thread runs rnngraph's kernels under: denormals flushed to zero, and a mark
// that it is running part of a parallel section (whose own parallel sections then run on it
// alone instead of asking for more threads).
#pragma once

namespace rnngraph {

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

// Whether the calling thread is running part of a parallel section.
bool in_parallel_part();

// Marks the calling thread as running part of a parallel section while alive.
class ParallelPartScope {
 public:
  ParallelPartScope();
  ~ParallelPartScope();
  ParallelPartScope(const ParallelPartScope&) = delete;
  ParallelPartScope& operator=(const ParallelPartScope&) = delete;

 private:
  bool saved_;
};

namespace runtime {
// Both, for a thread taking part in a job.
struct ThreadState {
  FlushDenormals flush;
  ParallelPartScope part;
};
}  // namespace runtime

}  // namespace rnngraph
