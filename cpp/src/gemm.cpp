#include "rnngraph/gemm.hpp"

#include <algorithm>

#include <cblas.h>

// The scipy-openblas32 wheel prefixes every symbol with "scipy_".
#ifdef RNNGRAPH_SCIPY_OPENBLAS
#define RNNGRAPH_CBLAS(name) scipy_cblas_##name
#else
#define RNNGRAPH_CBLAS(name) cblas_##name
#endif

namespace rnngraph {
namespace {

CBLAS_TRANSPOSE cblas_trans(Trans t) { return t == Trans::yes ? CblasTrans : CblasNoTrans; }

template <class S>
bool degenerate(Index m, Index n, Index k, S beta, S* c, Index ldc) {
  if (m == 0 || n == 0) return true;
  if (k > 0) return false;
  for (Index i = 0; i < m; ++i) {
    S* row = c + i * ldc;
    if (beta == S(0)) std::fill(row, row + n, S(0));
    else std::transform(row, row + n, row, [beta](S v) { return beta * v; });
  }
  return true;
}

// Leading dimensions must be at least 1 even for empty operands.
blasint ld(Index v) { return static_cast<blasint>(std::max<Index>(v, 1)); }

}  // namespace

template <>
void gemm<float>(Trans ta, Trans tb, Index m, Index n, Index k, float alpha, const float* a,
                 Index lda, const float* b, Index ldb, float beta, float* c, Index ldc) {
  if (degenerate(m, n, k, beta, c, ldc)) return;
  RNNGRAPH_CBLAS(sgemm)(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(m),
                        static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, ld(lda), b,
                        ld(ldb), beta, c, ld(ldc));
}

template <>
void gemm<double>(Trans ta, Trans tb, Index m, Index n, Index k, double alpha, const double* a,
                  Index lda, const double* b, Index ldb, double beta, double* c, Index ldc) {
  if (degenerate(m, n, k, beta, c, ldc)) return;
  RNNGRAPH_CBLAS(dgemm)(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(m),
                        static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, ld(lda), b,
                        ld(ldb), beta, c, ld(ldc));
}

}  // namespace rnngraph
