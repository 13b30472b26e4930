#include "rnngraph/threads.hpp"

#include <mutex>
#include <stdexcept>

#include <cblas.h>
#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define RNNGRAPH_HAS_MXCSR 1
#endif

#ifdef RNNGRAPH_SCIPY_OPENBLAS
#define RNNGRAPH_OPENBLAS(name) scipy_openblas_##name
static const char* const kLibrary = "scipy-openblas32";
#else
#define RNNGRAPH_OPENBLAS(name) openblas_##name
static const char* const kLibrary = "openblas";
#endif

namespace rnngraph {

namespace {
// The thread count the user asked for is the source of truth; OpenBLAS's own setting drops
// to 1 while a SerialBlasSection is alive.
std::mutex thread_mutex;
int serial_depth = 0;
int requested_threads = -1;

int requested_locked() {
  if (requested_threads < 0) requested_threads = RNNGRAPH_OPENBLAS(get_num_threads)();
  return requested_threads;
}
}  // namespace

BlasInfo blas_info() {
  BlasInfo info;
  info.library = kLibrary;
  info.config = RNNGRAPH_OPENBLAS(get_config)();
  info.core = RNNGRAPH_OPENBLAS(get_corename)();
  info.num_threads = get_num_threads();
  return info;
}

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_num_threads: n must be >= 1, got " + std::to_string(n));
  std::lock_guard<std::mutex> lock(thread_mutex);
  requested_threads = n;
  if (serial_depth == 0) RNNGRAPH_OPENBLAS(set_num_threads)(n);
}

int get_num_threads() {
  std::lock_guard<std::mutex> lock(thread_mutex);
  return requested_locked();
}

SerialBlasSection::SerialBlasSection() {
  std::lock_guard<std::mutex> lock(thread_mutex);
  requested_locked();
  if (serial_depth++ == 0) RNNGRAPH_OPENBLAS(set_num_threads)(1);
}

SerialBlasSection::~SerialBlasSection() {
  std::lock_guard<std::mutex> lock(thread_mutex);
  if (--serial_depth == 0) RNNGRAPH_OPENBLAS(set_num_threads)(requested_threads);
}

#ifdef RNNGRAPH_HAS_MXCSR
// MXCSR bits: FTZ (flush-to-zero, 0x8000) and DAZ (denormals-are-zero, 0x0040).
FlushDenormals::FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
FlushDenormals::~FlushDenormals() { _mm_setcsr(saved_); }
#else
FlushDenormals::FlushDenormals() {}
FlushDenormals::~FlushDenormals() {}
#endif

}  // namespace rnngraph
