// rnngraph/matmul.hpp: the shared gemm (results independent of the thread count).
#include "rnngraph/matmul.hpp"

#include "gemm.hpp"

namespace rnngraph {

template <class S>
void matmul(bool transpose_a, bool transpose_b, Index m, Index n, Index k, const S* a, Index lda,
            const S* b, Index ldb, S* c, Index ldc) {
  gemm<S>(transpose_a ? Trans::yes : Trans::no, transpose_b ? Trans::yes : Trans::no, m, n, k, S(1),
          a, lda, b, ldb, S(0), c, ldc);
}

template void matmul<float>(bool, bool, Index, Index, Index, const float*, Index, const float*,
                            Index, float*, Index);
template void matmul<double>(bool, bool, Index, Index, Index, const double*, Index, const double*,
                             Index, double*, Index);

}  // namespace rnngraph
