#include "gemm.hpp"

#include "arrays.hpp"
#include "parallel.hpp"
#include "simd.hpp"
#include "rnngraph/memory.hpp"
#include "rnngraph/threads.hpp"
#include "tuning.hpp"
#include "workspace.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <limits>
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

template <class S>
bool empty_product(Index m, Index n, Index k, S beta, S* c, Index ldc) {
  if (m == 0 || n == 0) return true;
  if (k > 0) return false;
  for (Index i = 0; i < m; ++i) {
    S* row = c + i * ldc;
    if (beta == S(0)) std::fill(row, row + n, S(0));
    else std::transform(row, row + n, row, [beta](S v) { return beta * v; });
  }
  return true;
}

namespace {

CBLAS_TRANSPOSE cblas_trans(Trans t) { return t == Trans::yes ? CblasTrans : CblasNoTrans; }

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
      for (int j = 0; j < NR; ++j) acc[r][j] = simd::fmadd(av[r], bv[j], acc[r][j]);
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) {
      S sum = S(0);
      for (int l = 0; l < L; ++l) sum += acc[r][j][l];
      for (Index q = p; q < k; ++q) sum = simd::fmadd_scalar(a[r * lda + q], b[j * ldb + q], sum);
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
    pin_blas_threads();
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
void blas_call(Trans ta, Trans tb, Index m, Index n, Index k, S alpha, const S* a, Index lda,
               const S* b, Index ldb, S beta, S* c, Index ldc);

template <>
void blas_call<float>(Trans ta, Trans tb, Index m, Index n, Index k, float alpha, const float* a,
                      Index lda, const float* b, Index ldb, float beta, float* c, Index ldc) {
  const BlasCall guard;
  RNNGRAPH_CBLAS(sgemm)(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(m),
                        static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, ld(lda), b,
                        ld(ldb), beta, c, ld(ldc));
}

template <>
void blas_call<double>(Trans ta, Trans tb, Index m, Index n, Index k, double alpha, const double* a,
                       Index lda, const double* b, Index ldb, double beta, double* c, Index ldc) {
  const BlasCall guard;
  RNNGRAPH_CBLAS(dgemm)(CblasRowMajor, cblas_trans(ta), cblas_trans(tb), static_cast<blasint>(m),
                        static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, ld(lda), b,
                        ld(ldb), beta, c, ld(ldc));
}

// The BLAS takes its sizes as blasint (32 bits with scipy-openblas32). A product whose side
// passes that has a leading dimension past it too (ldc >= n; lda >= k, or m for op(A) = Aᵀ;
// ldb >= k for op(B) = Bᵀ), but for two: C's rows m with op(A) = A, and the depth k with
// op(A) = Aᵀ, op(B) = B. Those are cut in halves until they fit (a cut k adds its second
// half into C); a product with a leading dimension past the limit runs on the small kernel,
// whose sizes are 64-bit. Only operands of 8 GiB and more reach this; tests lower the limit
// (set_blas_dimension_limit).
std::atomic<Index> blas_dimension_limit{std::numeric_limits<blasint>::max()};

template <class S>
void blas_gemm(Trans ta, Trans tb, Index m, Index n, Index k, S alpha, const S* a, Index lda,
               const S* b, Index ldb, S beta, S* c, Index ldc) {
  const Index limit = blas_dimension_limit.load(std::memory_order_relaxed);
  if (std::max({lda, ldb, ldc, n}) > limit) {
    return small_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  if (m > limit) {  // rows of C and of op(A)
    const Index h = m / 2;
    blas_gemm(ta, tb, h, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    const S* a2 = ta == Trans::no ? a + h * lda : a + h;
    return blas_gemm(ta, tb, m - h, n, k, alpha, a2, lda, b, ldb, beta, c + h * ldc, ldc);
  }
  if (k > limit) {  // the depth: the second half adds to the first
    const Index h = k / 2;
    blas_gemm(ta, tb, m, n, h, alpha, a, lda, b, ldb, beta, c, ldc);
    const S* a2 = ta == Trans::no ? a + h : a + h * lda;
    const S* b2 = tb == Trans::no ? b + h * ldb : b + h;
    return blas_gemm(ta, tb, m, n, k - h, alpha, a2, lda, b2, ldb, S(1), c, ldc);
  }
  blas_call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void set_blas_dimension_limit(Index limit) {
  blas_dimension_limit.store(limit > 0 ? limit : std::numeric_limits<blasint>::max(),
                             std::memory_order_relaxed);
}

ProductPath gemm_kernel(Trans ta, Trans tb, Index m, Index n, Index k, bool unit_alpha) {
  if (unit_alpha && recurrent_shape(ta, tb, m, n, k)) return ProductPath::dot;
  return m * n * k <= tuning::kSmallGemm ? ProductPath::small : ProductPath::blas;
}

template <class S>
void gemm_with(ProductPath kernel, Trans ta, Trans tb, Index m, Index n, Index k, S alpha,
               const S* a, Index lda, const S* b, Index ldb, S beta, S* c, Index ldc) {
  if (empty_product(m, n, k, beta, c, ldc)) return;
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

template bool empty_product<float>(Index, Index, Index, float, float*, Index);
template bool empty_product<double>(Index, Index, Index, double, double*, Index);

template void gemm_with<float>(ProductPath, Trans, Trans, Index, Index, Index, float, const float*,
                               Index, const float*, Index, float, float*, Index);
template void gemm_with<double>(ProductPath, Trans, Trans, Index, Index, Index, double,
                                const double*, Index, const double*, Index, double, double*, Index);

}  // namespace rnngraph
