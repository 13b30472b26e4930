// A plain matrix product for the ops around the recurrent ones (Graph.matrixMultiplication):
// C[m, n] = op(A)[m, k] · op(B)[k, n], row-major, on rnngraph's threads and its own BLAS.
// NumPy's matmul would wake NumPy's OpenBLAS pool, whose spinning threads then take the
// cores rnngraph's workers need for the next recurrent op (a row-7 training step took 45 ms
// instead of 28 ms at 2 threads: benchmarks/bench_training_step.py).
#pragma once

#include "rnngraph/problem.hpp"

namespace rnngraph {

template <class S>
void matmul(bool transpose_a, bool transpose_b, Index m, Index n, Index k, const S* a, Index lda,
            const S* b, Index ldb, S* c, Index ldc);

}  // namespace rnngraph
