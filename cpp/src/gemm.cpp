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

// Below this many multiply-adds a BLAS call costs more in dispatch than in arithmetic
// (a [1, 32] x [32, 128] step of a tiny LSTM), so a small kernel here does the work. It
// accumulates every C element over k in order, whatever the buffers' alignment, so results
// are reproducible bit for bit from call to call.
constexpr Index kSmallGemm = 32 * 1024;

template <class S, int Width>
inline void small_gemm_panel(bool ta, bool tb, Index i, Index j0, Index width, Index k, S alpha,
                             const S* a, Index lda, const S* b, Index ldb, S beta, S* c_row) {
  S acc[Width];
  for (Index jj = 0; jj < width; ++jj) acc[jj] = beta == S(0) ? S(0) : beta * c_row[j0 + jj];
  for (Index p = 0; p < k; ++p) {
    const S av = alpha * (ta ? a[p * lda + i] : a[i * lda + p]);
    if (tb) {
      for (Index jj = 0; jj < width; ++jj) acc[jj] += av * b[(j0 + jj) * ldb + p];
    } else {
      const S* b_row = b + p * ldb + j0;
      for (Index jj = 0; jj < width; ++jj) acc[jj] += av * b_row[jj];
    }
  }
  for (Index jj = 0; jj < width; ++jj) c_row[j0 + jj] = acc[jj];
}

template <class S>
void small_gemm(Trans ta, Trans tb, Index m, Index n, Index k, S alpha, const S* a, Index lda,
                const S* b, Index ldb, S beta, S* c, Index ldc) {
  constexpr int kWidth = 256 / sizeof(S);  // four 512-bit registers of accumulators
  const bool at = ta == Trans::yes, bt = tb == Trans::yes;
  for (Index i = 0; i < m; ++i) {
    S* c_row = c + i * ldc;
    Index j0 = 0;
    for (; j0 + kWidth <= n; j0 += kWidth) {
      small_gemm_panel<S, kWidth>(at, bt, i, j0, kWidth, k, alpha, a, lda, b, ldb, beta, c_row);
    }
    if (j0 < n) small_gemm_panel<S, kWidth>(at, bt, i, j0, n - j0, k, alpha, a, lda, b, ldb, beta, c_row);
  }
}

// Leading dimensions must be at least 1 even for empty operands.
blasint ld(Index v) { return static_cast<blasint>(std::max<Index>(v, 1)); }

}  // namespace

template <>
void gemm<float>(Trans ta, Trans tb, Index m, Index n, Index k, float alpha, const float* a,
                 Index lda, const float* b, Index ldb, float beta, float* c, Index ldc) {
  if (degenerate(m, n, k, beta, c, ldc)) return;
  if (m * n * k <= kSmallGemm) return small_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  RNNGRAPH_CBLAS(sgemm)(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(m),
                        static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, ld(lda), b,
                        ld(ldb), beta, c, ld(ldc));
}

template <>
void gemm<double>(Trans ta, Trans tb, Index m, Index n, Index k, double alpha, const double* a,
                  Index lda, const double* b, Index ldb, double beta, double* c, Index ldc) {
  if (degenerate(m, n, k, beta, c, ldc)) return;
  if (m * n * k <= kSmallGemm) return small_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  RNNGRAPH_CBLAS(dgemm)(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(m),
                        static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, ld(lda), b,
                        ld(ldb), beta, c, ld(ldc));
}

}  // namespace rnngraph
