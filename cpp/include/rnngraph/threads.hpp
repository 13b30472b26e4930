// The linked BLAS: identity and thread control.
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

}  // namespace rnngraph
