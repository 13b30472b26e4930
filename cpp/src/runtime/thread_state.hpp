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
  friend class UnflushedScope;  // (reads the outermost one's saved_)
  unsigned int saved_ = 0;
};

// While alive, the calling thread has the floating-point state it had before the outermost
// FlushDenormals alive in it (no change outside one). Around a call into another library
// that may start threads: a new thread inherits its creator's state, and one started
// under rnngraph's flush would keep flushing denormals in that library's own later work
// (libgomp's threads, which then flushed half of a plain torch op's results to zero).
class UnflushedScope {
 public:
  UnflushedScope();
  ~UnflushedScope();
  UnflushedScope(const UnflushedScope&) = delete;
  UnflushedScope& operator=(const UnflushedScope&) = delete;

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
// The calling thread's floating-point control state (MXCSR on x86: rounding mode, FTZ/DAZ)
// with denormals flushed, for the threads of a job to run under the same state as the
// caller: a rounding mode the caller chose applies to every item, whoever runs it.
unsigned job_float_state();

// For a thread taking part in a job: the caller's floating-point state, and the mark of a
// parallel part, while alive.
class ThreadState {
 public:
  explicit ThreadState(unsigned float_state);
  ~ThreadState();
  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;

 private:
  unsigned saved_float_state_;
  ParallelPartScope part_;
};
}  // namespace runtime

}  // namespace rnngraph
