// Vector types for the hand-written kernels (gemm.cpp, packed_gemm.cpp), written with GCC
// vector extensions so each instruction-set build (baseline, AVX2, AVX-512) gets its own
// width. Private to cpp/src: the width differs between the three builds of the core.
#pragma once

#include <cstring>
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
