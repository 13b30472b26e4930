#include "gemm.hpp"

#include "arrays.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "rnngraph/memory.hpp"
#include "tuning.hpp"
#include "workspace.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <shared_mutex>
#include <string>
#include <cstring>
#include <type_traits>
#include <utility>

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

// The small kernel (tuning::kSmallGemm): it accumulates every C element over k in order,
// whatever the buffers' alignment, so results are reproducible bit for bit from call to call.

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
    if (j0 < n)
      small_gemm_panel<S, kWidth>(at, bt, i, j0, n - j0, k, alpha, a, lda, b, ldb, beta, c_row);
  }
}

// ---------------------------------------------------------------------------------------
// The forward step's product for a batch of a few rows when R is not packed: hm·Rᵀ as dot
// products along R's own rows (a BLAS call would repack all of R every step, and a packed
// copy costs more than a few rows' product; packed_gemm.cpp serves the other cases). Every
// C element is summed in a fixed order, so results never depend on buffer alignment.
using simd::kWide;
using simd::load;
using simd::store_value;
using simd::Vec;
using simd::with_rows;

// C[MR, NR] = beta·C + A[MR, k]·B[NR, k]ᵀ: dot products along k, lanes summed in order.
template <class S, int MR, int NR>
void nt_block(Index k, const S* a, Index lda, const S* b, Index ldb, S beta, S* c, Index ldc) {
  using V = typename Vec<S>::type;
  constexpr int L = Vec<S>::lanes;
  V acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j) acc[r][j] = V{};
  Index p = 0;
  for (; p + L <= k; p += L) {
    V av[MR], bv[NR];
    for (int r = 0; r < MR; ++r) av[r] = load<V>(a + r * lda + p);
    for (int j = 0; j < NR; ++j) bv[j] = load<V>(b + j * ldb + p);
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < NR; ++j) acc[r][j] += av[r] * bv[j];
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) {
      S sum = S(0);
      for (int l = 0; l < L; ++l) sum += acc[r][j][l];
      for (Index q = p; q < k; ++q) sum += a[r * lda + q] * b[j * ldb + q];
      c[r * ldc + j] = store_value(beta, c[r * ldc + j], sum);
    }
  }
}

template <class S>
void recurrent_nt(Index m, Index n, Index k, const S* a, Index lda, const S* b, Index ldb, S beta,
                  S* c, Index ldc) {
  constexpr int MR = kWide ? 4 : 2, NR = 4;
  for (Index j0 = 0; j0 < n; j0 += NR) {
    for (Index i0 = 0; i0 < m; i0 += MR) {
      with_rows<MR>(std::min<Index>(MR, m - i0), [&](auto mr) {
        with_rows<NR>(std::min<Index>(NR, n - j0), [&](auto nr) {
          nt_block<S, decltype(mr)::value, decltype(nr)::value>(k, a + i0 * lda, lda, b + j0 * ldb,
                                                                ldb, beta, c + i0 * ldc + j0, ldc);
        });
      });
    }
  }
}

// Whether a product goes to the dot-product kernel above: A plain with few rows (it re-reads
// A for every four rows of B), B transposed (R's own rows), enough work to matter.
bool recurrent_shape(Trans ta, Trans tb, Index m, Index n, Index k) {
  return ta == Trans::no && tb == Trans::yes && m <= tuning::kDotRows &&
         n * k >= tuning::kDotMinSize;
}

// OpenBLAS takes a buffer (32 MiB on x86-64) from a pool of its own for each call. A call
// made while more threads are inside the BLAS than ever before makes it map another, and if
// that fails it prints "Memory allocation still failed after 10 retries" and ends the
// process. So before such a call rnngraph checks that twice that much address space can be
// had, and raises a memory error instead (AllocationError) when it cannot.
constexpr size_t kBlasBufferProbe = size_t(64) << 20;
std::atomic<int> blas_callers{0}, blas_callers_peak{0};

// fork: OpenBLAS's own allocation lock would be copied locked into a child forked while one
// of rnngraph's threads is inside a BLAS call, and the child's first BLAS call would hang on
// it. So every call holds this lock shared, and a fork waits for the calls in flight and
// holds it across (pthread_atfork below): no thread is inside the BLAS when fork copies it.
std::shared_mutex blas_fork_lock;
void lock_blas_before_fork() { blas_fork_lock.lock(); }
void unlock_blas_after_fork() { blas_fork_lock.unlock(); }
// The child's only thread is not the writer that locked it (a rwlock knows its writer), so it
// starts from a fresh, unlocked lock instead.
void fresh_blas_lock_in_child() { new (&blas_fork_lock) std::shared_mutex; }
[[maybe_unused]] const int blas_fork_handlers =
    pthread_atfork(lock_blas_before_fork, unlock_blas_after_fork, fresh_blas_lock_in_child);

class BlasCall {
 public:
  BlasCall() : fork_guard_(blas_fork_lock) {
    const int now = blas_callers.fetch_add(1, std::memory_order_acq_rel) + 1;
    int peak = blas_callers_peak.load(std::memory_order_acquire);
    if (now <= peak) return;
    void* probe = mmap(nullptr, kBlasBufferProbe, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (probe == MAP_FAILED) {
      blas_callers.fetch_sub(1, std::memory_order_acq_rel);
      throw AllocationError(kBlasBufferProbe);
    }
    munmap(probe, kBlasBufferProbe);
    while (now > peak && !blas_callers_peak.compare_exchange_weak(peak, now)) {
    }
  }
  ~BlasCall() { blas_callers.fetch_sub(1, std::memory_order_acq_rel); }
  BlasCall(const BlasCall&) = delete;
  BlasCall& operator=(const BlasCall&) = delete;

 private:
  std::shared_lock<std::shared_mutex> fork_guard_;
};

// Leading dimensions must be at least 1 even for empty operands.
blasint ld(Index v) { return static_cast<blasint>(std::max<Index>(v, 1)); }

template <class S>
void blas_gemm(Trans ta, Trans tb, Index m, Index n, Index k, S alpha, const S* a, Index lda,
               const S* b, Index ldb, S beta, S* c, Index ldc);

template <>
void blas_gemm<float>(Trans ta, Trans tb, Index m, Index n, Index k, float alpha, const float* a,
                      Index lda, const float* b, Index ldb, float beta, float* c, Index ldc) {
  const BlasCall guard;
  RNNGRAPH_CBLAS(sgemm)(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(m),
                        static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, ld(lda), b,
                        ld(ldb), beta, c, ld(ldc));
}

template <>
void blas_gemm<double>(Trans ta, Trans tb, Index m, Index n, Index k, double alpha, const double* a,
                       Index lda, const double* b, Index ldb, double beta, double* c, Index ldc) {
  const BlasCall guard;
  RNNGRAPH_CBLAS(dgemm)(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(m),
                        static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, ld(lda), b,
                        ld(ldb), beta, c, ld(ldc));
}

}  // namespace

ProductPath gemm_kernel(Trans ta, Trans tb, Index m, Index n, Index k, bool unit_alpha) {
  if (unit_alpha && recurrent_shape(ta, tb, m, n, k)) return ProductPath::dot;
  return m * n * k <= tuning::kSmallGemm ? ProductPath::small : ProductPath::blas;
}

namespace {

// How a large product is cut into tasks: a grid of row_blocks × column_blocks blocks of C,
// each summed over `parts` slices of k. It depends on the shape alone (tuning.hpp, kGemm*):
// each element of C is then summed the same way however many threads share the product.
struct ProductCut {
  Index row_blocks = 1, column_blocks = 1, parts = 1;
  Index blocks() const { return row_blocks * column_blocks; }
  // Where block row rb (0 .. row_blocks) of m rows, and block column cb of n, begin.
  Index row_edge(Index m, Index rb) const { return m * rb / row_blocks; }
  Index column_edge(Index n, Index cb) const { return n * cb / column_blocks; }
};

// Where op(A)[r0:, k0:] and op(B)[k0:, c0:] begin: the operands of C's block at (r0, c0)
// summed from depth k0.
template <class S>
std::pair<const S*, const S*> block_operands(Trans ta, Trans tb, const S* a, Index lda, const S* b,
                                             Index ldb, Index r0, Index c0, Index k0) {
  return {ta == Trans::no ? a + r0 * lda + k0 : a + k0 * lda + r0,
          tb == Trans::no ? b + k0 * ldb + c0 : b + c0 * ldb + k0};
}

// Halves the longer side of the blocks (the other when the longer one cannot) while both
// halves keep at least `min_side` and the blocks number fewer than `max_blocks`. Every
// count is a power of two, so 1, 2, 4, 8 and 16 threads get whole shares of the tasks.
void halve_blocks(ProductCut& cut, Index m, Index n, Index min_side, Index max_blocks) {
  while (cut.blocks() < max_blocks) {
    const Index rows = m / cut.row_blocks, cols = n / cut.column_blocks;
    const bool rows_first = rows >= cols;
    if ((rows_first ? rows : cols) / 2 >= min_side) {
      (rows_first ? cut.row_blocks : cut.column_blocks) *= 2;
    } else if ((rows_first ? cols : rows) / 2 >= min_side) {
      (rows_first ? cut.column_blocks : cut.row_blocks) *= 2;
    } else {
      return;
    }
  }
}

static_assert((tuning::kGemmTasks & (tuning::kGemmTasks - 1)) == 0,
              "equal shares for 1, 2, 4, ... threads need a power of two");

ProductCut cut_product(Index m, Index n, Index k) {
  ProductCut cut;
  if (m * n * k < tuning::parallel_threshold(tuning::ParallelSite::gemm)) return cut;
  halve_blocks(cut, m, n, tuning::kGemmBlock, tuning::kGemmTasks);
  // Still too few blocks of C for the threads: the depth k is cut (split-k), which keeps the
  // blocks' arithmetic intensity, and only then the blocks' sides below kGemmBlock.
  while (cut.blocks() * cut.parts < tuning::kGemmTasks && k / (2 * cut.parts) >= tuning::kGemmDepth)
    cut.parts *= 2;
  halve_blocks(cut, m, n, tuning::kGemmMinBlock, tuning::kGemmTasks / cut.parts);
  return cut;
}

// sgemm on OpenBLAS's SkylakeX kernels (SkylakeX, Cooperlake, SapphireRapids: one family of
// kernels) sums each element of a block as it does in any rectangle holding it: 0 of 55
// random shapes and cuts differed (m, n 128-1500, k 8-1500, 1-4 x 1-4 blocks, every
// transpose), with blocks of 2^20 multiply-adds or more, which its small-matrix and direct
// kernels (products of a few thousand) never take. Its dgemm does not (52 of 55 differed),
// and other cores were not measured: there the blocks stay separate calls.
template <class S>
bool merge_blocks() {
  if constexpr (!std::is_same_v<S, float>) {
    return false;
  } else {
    static const bool skylake_family = [] {
      const std::string core = blas_info().core;
      return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
    }();
    return skylake_family;
  }
}

// The blocks [first, last) of `cut` (row-major over the grid), as few BLAS calls as
// rectangles of whole blocks cover them: a partial row of blocks, whole rows, a partial row.
// One call repacks each operand once where per-block calls repack them for every block.
// Only where each element of C is measured to be the same sum whatever rectangle holds it
// (merge_blocks): float, on OpenBLAS's SkylakeX-family cores, blocks of kBlasMergeMin
// multiply-adds or more.
// (1 thread, 2-core machine, rnngraph's OpenBLAS, GFLOP/s as one call / as 256 x 256 blocks:
// row 8's projection 182 / 156, its dR 192 / 167, its dx 190 / 172; 2048³ 220 / 193.)
template <class S>
void blas_block_runs(const ProductCut& cut, Index first, Index last, Trans ta, Trans tb, Index m,
                     Index n, Index k, S alpha, const S* a, Index lda, const S* b, Index ldb,
                     S beta, S* c, Index ldc) {
  const Index columns = cut.column_blocks;
  while (first < last) {
    const Index rb = first / columns, cb = first % columns;
    Index rb_end = rb + 1, cb_end = std::min(columns, cb + (last - first));
    if (cb == 0 && last - first >= columns) {
      rb_end = rb + (last - first) / columns;
      cb_end = columns;
    }
    const Index r0 = cut.row_edge(m, rb), r1 = cut.row_edge(m, rb_end);
    const Index c0 = cut.column_edge(n, cb), c1 = cut.column_edge(n, cb_end);
    const auto [ab, bb] = block_operands(ta, tb, a, lda, b, ldb, r0, c0, Index(0));
    blas_gemm(ta, tb, r1 - r0, c1 - c0, k, alpha, ab, lda, bb, ldb, beta, c + r0 * ldc + c0, ldc);
    first += (rb_end - rb) * columns - cb - (columns - cb_end);
  }
}

}  // namespace

template <class S>
void gemm(Trans ta, Trans tb, Index m, Index n, Index k, S alpha, const S* a, Index lda, const S* b,
          Index ldb, S beta, S* c, Index ldc) {
  if (degenerate(m, n, k, beta, c, ldc)) return;
  // The kernel is chosen for the whole product, and every block runs it.
  const ProductPath kernel = gemm_kernel(ta, tb, m, n, k, alpha == S(1));
  const ProductCut cut = cut_product(m, n, k);
  const Index block_work = (m / cut.row_blocks) * (n / cut.column_blocks) * k;
  if (kernel == ProductPath::blas && cut.parts == 1 && block_work >= tuning::kBlasMergeMin &&
      merge_blocks<S>()) {
    parallel_runs(cut.blocks(), [&](Index first, Index last) {
      blas_block_runs(cut, first, last, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    });
    return;
  }
  // Part 0 of each block goes into C; part j > 0 into a buffer of its own, added to C after
  // all parts in the order j = 1, 2, ... (a fixed order: the sums do not depend on threads).
  const Index parts = cut.parts;
  Buffer<S> partials(static_cast<size_t>((parts - 1) * m * n));
  parallel_for(cut.blocks() * parts, [&](Index task) {
    const Index block_index = task / parts, j = task % parts;
    const Index rb = block_index / cut.column_blocks, cb = block_index % cut.column_blocks;
    const Index r0 = cut.row_edge(m, rb), r1 = cut.row_edge(m, rb + 1);
    const Index c0 = cut.column_edge(n, cb), c1 = cut.column_edge(n, cb + 1);
    const Index k0 = k * j / parts, kc = k * (j + 1) / parts - k0;
    const auto [ab, bb] = block_operands(ta, tb, a, lda, b, ldb, r0, c0, k0);
    S* cj = j == 0 ? c : partials.data() + (j - 1) * m * n;
    const Index ldcj = j == 0 ? ldc : n;
    gemm_with(kernel, ta, tb, r1 - r0, c1 - c0, kc, alpha, ab, lda, bb, ldb, j == 0 ? beta : S(0),
              cj + r0 * ldcj + c0, ldcj);
  });
  if (parts == 1) return;
  const Index row_blocks = parallel_blocks(m * n * parts, tuning::ParallelSite::pass, m);
  parallel_for(row_blocks, [&](Index r) {
    const Index r0 = m * r / row_blocks, rows = m * (r + 1) / row_blocks - r0;
    for (Index j = 1; j < parts; ++j)
      block(c + r0 * ldc, rows, n, ldc) +=
          cblock(partials.data() + (j - 1) * m * n + r0 * n, rows, n, n);
  });
}

template <class S>
void gemm_with(ProductPath kernel, Trans ta, Trans tb, Index m, Index n, Index k, S alpha,
               const S* a, Index lda, const S* b, Index ldb, S beta, S* c, Index ldc) {
  if (degenerate(m, n, k, beta, c, ldc)) return;
  switch (kernel) {
    case ProductPath::dot:
      if (ta == Trans::no && tb == Trans::yes && alpha == S(1)) {
        return recurrent_nt(m, n, k, a, lda, b, ldb, beta, c, ldc);
      }
      break;
    case ProductPath::blas:
      return blas_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    case ProductPath::small:
      return small_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    default:
      break;
  }
  gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template void gemm<float>(Trans, Trans, Index, Index, Index, float, const float*, Index,
                          const float*, Index, float, float*, Index);
template void gemm<double>(Trans, Trans, Index, Index, Index, double, const double*, Index,
                           const double*, Index, double, double*, Index);

template void gemm_with<float>(ProductPath, Trans, Trans, Index, Index, Index, float, const float*,
                               Index, const float*, Index, float, float*, Index);
template void gemm_with<double>(ProductPath, Trans, Trans, Index, Index, Index, double,
                                const double*, Index, const double*, Index, double, double*, Index);

}  // namespace rnngraph
