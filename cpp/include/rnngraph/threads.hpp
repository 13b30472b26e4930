// The linked BLAS (identity and thread control) and how a call spends its threads.
#pragma once

#include <string>

namespace rnngraph {

struct BlasInfo {
  std::string library;  // e.g. "scipy-openblas32"
  std::string config;   // OpenBLAS's own build string (version, DYNAMIC_ARCH, ...)
  std::string core;     // kernel family chosen at load time, e.g. "SkylakeX"
  int num_threads = 1;
};

BlasInfo blas_info();
void set_num_threads(int n);
int get_num_threads();

// While any is alive, rnngraph's BLAS runs single-threaded, so that several of our own
// threads can call it at once (one owner of parallelism per call). Nested and concurrent
// sections are counted; the last one to end restores the thread count.
class SerialBlasSection {
 public:
  SerialBlasSection();
  ~SerialBlasSection();
  SerialBlasSection(const SerialBlasSection&) = delete;
  SerialBlasSection& operator=(const SerialBlasSection&) = delete;
};

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

// Run body(0) .. body(count - 1): concurrently on `count` threads when `concurrent` (each
// with single-threaded BLAS: one owner of parallelism per call), else in order here.
// An exception thrown by any body is rethrown in the caller.
template <class Body>
void run_parts(int count, bool concurrent, Body&& body);

}  // namespace rnngraph

#include "rnngraph/threads_impl.hpp"
