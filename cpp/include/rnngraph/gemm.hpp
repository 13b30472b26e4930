// Row-major GEMM through the linked BLAS: C = alpha * op(A) * op(B) + beta * C.
#pragma once

#include "rnngraph/arrays.hpp"

namespace rnngraph {

enum class Trans { no, yes };

// Shapes are those of op(A) [m, k], op(B) [k, n] and C [m, n]. Degenerate sizes are
// handled here (k == 0 scales C by beta), so callers never special-case empty T or N.
template <class S>
void gemm(Trans ta, Trans tb, Index m, Index n, Index k, S alpha, const S* a, Index lda,
          const S* b, Index ldb, S beta, S* c, Index ldc);

}  // namespace rnngraph
