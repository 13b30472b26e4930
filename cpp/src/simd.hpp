// Vector types for the hand-written kernels (gemm.cpp, packed_gemm.cpp), written with GCC
// vector extensions so each instruction-set build (baseline, AVX2, AVX-512) gets its own
// width. Private to cpp/src: the width differs between the three builds of the core.
#pragma once

#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <type_traits>

#include "arrays.hpp"

namespace rnngraph {
namespace simd {

#if defined(__AVX512F__)
constexpr int kVecBytes = 64;
#elif defined(__AVX__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif
constexpr bool kWide = kVecBytes == 64;  // 32 vector registers (else 16)

// For the per-vector math of the cells' steps: called out of line, each call would spill
// every live vector register around it (the ABI saves none of them).
#define RNNGRAPH_ALWAYS_INLINE inline __attribute__((always_inline))

template <class S>
struct Vec {
  typedef S type __attribute__((vector_size(kVecBytes)));
  static constexpr int lanes = kVecBytes / static_cast<int>(sizeof(S));
};

// a·b + c, rounded once where the target has FMA instructions (else a·b rounded, then + c:
// without them no compiler can fuse it either),
// written out rather than left to the compiler's contraction: GCC 13 contracts a kernel's
// a·b + c into an FMA in some register-tile shapes and not in others, so an element's bits
// depended on the tile it fell in, and with it on the thread count (16-core machine: the
// team's items end in partial tiles). The kernels' accumulations use these. (As fast as the
// contracted code on the 2-core Zen 3: results/fma-kernels-ab-2cores-epyc-avx2-2026-11-29.txt.)
template <class V>
RNNGRAPH_ALWAYS_INLINE V fmadd(const V& a, const V& b, const V& c) {
#if defined(__FMA__)
  using S = std::remove_cv_t<std::remove_reference_t<decltype(a[0])>>;
  constexpr bool single = std::is_same_v<S, float>;
  if constexpr (sizeof(V) == 64) {
#if defined(__AVX512F__)
    if constexpr (single) return (V)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
    else return (V)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
#endif
  } else if constexpr (sizeof(V) == 32) {
    if constexpr (single) return (V)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
    else return (V)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
  } else if constexpr (sizeof(V) == 16) {
    if constexpr (single) return (V)_mm_fmadd_ps((__m128)a, (__m128)b, (__m128)c);
    else return (V)_mm_fmadd_pd((__m128d)a, (__m128d)b, (__m128d)c);
  }
#endif
  return a * b + c;
}

// x in every lane: one broadcast instruction (V{} + x would add, and a loop over the lanes
// compiled to lane inserts: rows 4 and 5 of the benchmark 1.6x and 2.6x slower).
template <class V, class S>
RNNGRAPH_ALWAYS_INLINE V broadcast(S x) {
  constexpr bool single = std::is_same_v<S, float>;
  if constexpr (sizeof(V) == 64) {
#if defined(__AVX512F__)
    if constexpr (single) return (V)_mm512_set1_ps(x);
    else return (V)_mm512_set1_pd(x);
#endif
  } else if constexpr (sizeof(V) == 32) {
#if defined(__AVX__)
    if constexpr (single) return (V)_mm256_set1_ps(x);
    else return (V)_mm256_set1_pd(x);
#endif
  } else if constexpr (sizeof(V) == 16) {
    if constexpr (single) return (V)_mm_set1_ps(x);
    else return (V)_mm_set1_pd(x);
  }
  return V{} + x;  // (not reached on x86-64)
}

// The scalar twin of fmadd.
template <class S>
RNNGRAPH_ALWAYS_INLINE S fmadd_scalar(S a, S b, S c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

template <class V, class S>
inline V load(const S* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}

template <class S>
inline S store_value(S beta, S old, S value) {
  return beta == S(0) ? value : beta * old + value;
}

// Integer vectors of Vec<S>'s width and lane count: the lane indices of a shuffle.
template <class S>
struct Mask {
  using lane = std::conditional_t<sizeof(S) == 4, int, long long>;
  typedef lane type __attribute__((vector_size(kVecBytes)));
};

// One round of transpose_block: in every pair of rows (i, i + W) with i & W == 0, swap the
// upper W lanes of row i with the lower W lanes of row i + W, then the same for W / 2, ... 1.
template <class S, int W>
RNNGRAPH_ALWAYS_INLINE void swap_blocks(typename Vec<S>::type* r) {
  constexpr int L = Vec<S>::lanes;
  typename Mask<S>::type lower, upper;  // lanes of (x, y): x's are 0..L-1, y's L..2L-1
  for (int l = 0; l < L; ++l) {
    lower[l] = (l & W) ? L + l - W : l;
    upper[l] = (l & W) ? L + l : l + W;
  }
  for (int i = 0; i < L; ++i) {
    if (i & W) continue;
    const auto x = r[i], y = r[i + W];
    r[i] = __builtin_shuffle(x, y, lower);
    r[i + W] = __builtin_shuffle(x, y, upper);
  }
  if constexpr (W > 1) swap_blocks<S, W / 2>(r);
}

// b[c·ldb + r] = a[r·lda + c] for r, c < L (an L×L block, L = Vec<S>::lanes): L vector loads,
// log2 L rounds of two-row shuffles, L vector stores (the scalar transpose moves one element
// per load and store: 0.77 ms against 0.23 ms for R of row 8, 2048 × 512, AVX-512, cold).
template <class S>
RNNGRAPH_ALWAYS_INLINE void transpose_block(const S* a, Index lda, S* b, Index ldb) {
  using V = typename Vec<S>::type;
  constexpr int L = Vec<S>::lanes;
  V r[L];
  for (int i = 0; i < L; ++i) r[i] = load<V>(a + i * lda);
  if constexpr (L > 1) swap_blocks<S, L / 2>(r);
  for (int i = 0; i < L; ++i) std::memcpy(b + i * ldb, &r[i], sizeof(V));
}

// Dispatch a runtime row count 1..MR to the matching instantiation f(integral_constant<R>).
template <int MR, class F>
inline void with_rows(Index rows, F&& f) {
  if constexpr (MR >= 1) {
    if (rows == MR) return f(std::integral_constant<int, MR>{});
    if constexpr (MR > 1) with_rows<MR - 1>(rows, f);
  }
}

}  // namespace simd
}  // namespace rnngraph
