#include "runtime/thread_state.hpp"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define RNNGRAPH_X86 1
#endif

namespace rnngraph {

namespace {
thread_local bool parallel_part = false;
}

bool in_parallel_part() { return parallel_part; }
ParallelPartScope::ParallelPartScope() : saved_(parallel_part) { parallel_part = true; }
ParallelPartScope::~ParallelPartScope() { parallel_part = saved_; }

#ifdef RNNGRAPH_X86
// MXCSR bits: FTZ (flush-to-zero, 0x8000) and DAZ (denormals-are-zero, 0x0040).
FlushDenormals::FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
FlushDenormals::~FlushDenormals() { _mm_setcsr(saved_); }
#else
FlushDenormals::FlushDenormals() {}
FlushDenormals::~FlushDenormals() {}
#endif

}  // namespace rnngraph
