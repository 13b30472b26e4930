#include "runtime/thread_state.hpp"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define RNNGRAPH_X86 1
#endif

namespace rnngraph {

namespace {
thread_local bool parallel_part = false;
}  // namespace

bool in_parallel_part() { return parallel_part; }
ParallelPartScope::ParallelPartScope() : saved_(parallel_part) { parallel_part = true; }
ParallelPartScope::~ParallelPartScope() { parallel_part = saved_; }

#ifdef RNNGRAPH_X86
// MXCSR bits: FTZ (flush-to-zero, 0x8000) and DAZ (denormals-are-zero, 0x0040).
constexpr unsigned kFlushBits = 0x8040u;
// The outermost FlushDenormals alive in this thread: its saved_ is the state before the flush.
static thread_local const FlushDenormals* outermost_flush = nullptr;
FlushDenormals::FlushDenormals() : saved_(_mm_getcsr()) {
  if (!outermost_flush) outermost_flush = this;
  _mm_setcsr(saved_ | kFlushBits);
}
FlushDenormals::~FlushDenormals() {
  _mm_setcsr(saved_);
  if (outermost_flush == this) outermost_flush = nullptr;
}
UnflushedScope::UnflushedScope() : saved_(_mm_getcsr()) {
  if (outermost_flush) _mm_setcsr(outermost_flush->saved_);
}
UnflushedScope::~UnflushedScope() { _mm_setcsr(saved_); }
namespace runtime {
unsigned job_float_state() { return _mm_getcsr() | kFlushBits; }
ThreadState::ThreadState(unsigned float_state) : saved_float_state_(_mm_getcsr()) {
  _mm_setcsr(float_state);
}
ThreadState::~ThreadState() { _mm_setcsr(saved_float_state_); }
}  // namespace runtime
#else
FlushDenormals::FlushDenormals() {}
FlushDenormals::~FlushDenormals() {}
UnflushedScope::UnflushedScope() {}
UnflushedScope::~UnflushedScope() {}
namespace runtime {
unsigned job_float_state() { return 0; }
ThreadState::ThreadState(unsigned) : saved_float_state_(0) {}
ThreadState::~ThreadState() {}
}  // namespace runtime
#endif

}  // namespace rnngraph
