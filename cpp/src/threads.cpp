#include "rnngraph/threads.hpp"

#include <stdexcept>

#include <cblas.h>

#ifdef RNNGRAPH_SCIPY_OPENBLAS
#define RNNGRAPH_OPENBLAS(name) scipy_openblas_##name
static const char* const kLibrary = "scipy-openblas32";
#else
#define RNNGRAPH_OPENBLAS(name) openblas_##name
static const char* const kLibrary = "openblas";
#endif

namespace rnngraph {

BlasInfo blas_info() {
  BlasInfo info;
  info.library = kLibrary;
  info.config = RNNGRAPH_OPENBLAS(get_config)();
  info.core = RNNGRAPH_OPENBLAS(get_corename)();
  info.num_threads = RNNGRAPH_OPENBLAS(get_num_threads)();
  return info;
}

void set_num_threads(int n) {
  if (n < 1) throw std::invalid_argument("set_num_threads: n must be >= 1, got " + std::to_string(n));
  RNNGRAPH_OPENBLAS(set_num_threads)(n);
}

int get_num_threads() { return RNNGRAPH_OPENBLAS(get_num_threads)(); }

}  // namespace rnngraph
