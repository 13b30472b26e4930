// Row-major GEMM through the linked BLAS: C = alpha * op(A) * op(B) + beta * C.
#pragma once

#include <vector>

#include "rnngraph/forced_paths.hpp"
#include "rnngraph/problem.hpp"

namespace rnngraph {

enum class Trans { no, yes };

// Shapes are those of op(A) [m, k], op(B) [k, n] and C [m, n]. Degenerate sizes are
// handled here (k == 0 scales C by beta), so callers never special-case empty T or N.
template <class S>
void gemm(Trans ta, Trans tb, Index m, Index n, Index k, S alpha, const S* a, Index lda, const S* b,
          Index ldb, S beta, S* c, Index ldc);

// One product C = alpha·op(A)·op(B) + beta·C, as gemm's arguments.
template <class S>
struct GemmProduct {
  Trans ta, tb;
  Index m, n, k;
  S alpha;
  const S* a;
  Index lda;
  const S* b;
  Index ldb;
  S beta;
  S* c;
  Index ldc;
};

// Independent products (no product's C is another's operand or overlaps another's C) as one
// parallel job: each is cut and summed exactly as gemm cuts and sums it alone, so each C is
// bit for bit gemm's, and the threads take tasks of any product, so a thread that falls
// behind holds up only the group's end. gemm(...) is a group of one.
template <class S>
void gemm_group(const std::vector<GemmProduct<S>>& products);

// True when nothing is left to multiply (m or n is 0; or k is 0, and then C = beta·C).
template <class S>
bool empty_product(Index m, Index n, Index k, S beta, S* c, Index ldc);

// The kernel gemm runs a product of this shape with (alpha == 1 or not): ProductPath::dot,
// small or blas. gemm runs every block of a product it cuts among threads with the kernel
// chosen for the whole product, so results do not depend on the thread count.
ProductPath gemm_kernel(Trans ta, Trans tb, Index m, Index n, Index k, bool unit_alpha);

// The same product on this thread through one named kernel: ProductPath::dot (A·Bᵀ only, with
// alpha = 1), blas or small; automatic lets gemm's thresholds choose (tuning.hpp).
template <class S>
void gemm_with(ProductPath kernel, Trans ta, Trans tb, Index m, Index n, Index k, S alpha,
               const S* a, Index lda, const S* b, Index ldb, S beta, S* c, Index ldc);

}  // namespace rnngraph
