// The activations of SPEC.md section 2 on whole SIMD vectors, for the cells' element-wise
// steps (each cell sweeps its rows once, a vector of columns at a time, with every gate of a
// column in registers).
//
// float: exp, sigmoid and tanh are computed here with vector instructions (Cephes' expf and
// tanhf; measured within 2.5 ulp of the exact value over the normal range, sigmoid
// 2.48 ulp at x = -16.6357, tanh 1.33; tanh saturating to exactly ±1). double:
// each lane goes through the C library (double is the precision of gradient checks, not of
// the benchmarks). NaN propagates through every activation and derivative.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "rnngraph/activation.hpp"
#include "simd.hpp"

namespace rnngraph {
namespace simd {

template <class V>
inline V splat(typename std::remove_reference_t<decltype(V{}[0])> s) {
  return V{} + s;
}

// p[0 : n) as a vector, zeros beyond n (n ≤ lanes); and the reverse store.
template <class V, class S>
inline V load_n(const S* p, Index n) {
  V v{};
  std::memcpy(&v, p, static_cast<size_t>(n) * sizeof(S));
  return v;
}
template <class V, class S>
inline void store_n(S* p, const V& v, Index n) {
  std::memcpy(p, &v, static_cast<size_t>(n) * sizeof(S));
}

// f(j, n) for the vectors of a row of `cols` elements: columns [j, j + n), n = lanes but at
// the row's tail. (The tail's vector is zero-padded: every activation of 0 is finite.)
template <class S, class F>
inline void for_each_vector(Index cols, F&& f) {
  constexpr Index L = Vec<S>::lanes;
  Index j = 0;
  for (; j + L <= cols; j += L) f(j, L);
  if (j < cols) f(j, cols - j);
}

// One row's vector at column j: a full load, or a zero-padded one at the tail.
template <class S>
struct RowVector {
  using V = typename Vec<S>::type;
  Index j, n;
  V load(const S* row) const {
    return n == Vec<S>::lanes ? simd::load<V>(row + j) : load_n<V>(row + j, n);
  }
  void store(S* row, const V& v) const {
    if (n == Vec<S>::lanes) std::memcpy(row + j, &v, sizeof(V));
    else store_n(row + j, v, n);
  }
};

// f(r, at) for every row r < rows and every vector `at` of its columns [col0, col1): a
// step's element-wise math over some of its hidden units (driver/steps.hpp, col0 and col1).
template <class S, class F>
inline void for_each_row_vector(Index rows, Index col0, Index col1, F&& f) {
  for (Index r = 0; r < rows; ++r) {
    for_each_vector<S>(col1 - col0, [&](Index j, Index n) { f(r, RowVector<S>{col0 + j, n}); });
  }
}

namespace detail {

template <class V>
using IntVec = decltype(V{} < V{});  // the signed integers of the lane width

// exp(x) for float lanes (Cephes expf): x = n·ln2 + r, exp(r) by a degree-7 polynomial,
// 2^n written into the exponent. x is clamped to [-87.3, 88] (normal results); NaN stays NaN.
template <class V>
RNNGRAPH_ALWAYS_INLINE V exp_float(V x) {
  using VI = IntVec<V>;
  x = x > 88.0f ? splat<V>(88.0f) : x;
  x = x < -87.3f ? splat<V>(-87.3f) : x;
  constexpr float magic = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
  const V shifted = x * 1.44269504088896341f + magic;
  const V n = shifted - magic;
  V r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p = 1.9875691500e-4f * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  VI bits;
  std::memcpy(&bits, &shifted, sizeof(V));
  bits = (bits - 0x4B400000 + 127) << 23;  // 2^n from n held in the mantissa of `shifted`
  V scale;
  std::memcpy(&scale, &bits, sizeof(V));
  return p * scale;
}

template <class V>
RNNGRAPH_ALWAYS_INLINE V sigmoid_float(V x) {
  return 1.0f / (1.0f + exp_float(-x));
}

// tanh for float lanes (Cephes' tanhf): x + x³·P(x²) below |x| = 0.625, else
// ±(1 − 2/(e^{2|x|} + 1)), which reaches ±1 exactly where float tanh does.
template <class V>
RNNGRAPH_ALWAYS_INLINE V tanh_float(V x) {
  const V a = x < 0.0f ? -x : x;
  const V z = x * x;
  V p = -5.70498872745e-3f * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const V small = p * z * x + x;
  V large = 1.0f - 2.0f / (exp_float(a + a) + 1.0f);
  large = x < 0.0f ? -large : large;
  return a < 0.625f ? small : large;
}

// Each lane through a scalar function (double).
template <class V, class F>
inline V per_lane(V x, F f) {
  constexpr int L = sizeof(V) / sizeof(x[0]);
  for (int l = 0; l < L; ++l) x[l] = f(x[l]);
  return x;
}

}  // namespace detail

// act(x), lane by lane.
template <class S>
RNNGRAPH_ALWAYS_INLINE typename Vec<S>::type activate(Activation act, typename Vec<S>::type x) {
  using V = typename Vec<S>::type;
  switch (act) {
    case Activation::none:
      return x;
    case Activation::relu:
      return x < S(0) ? V{} : x;
    case Activation::tanh:
      if constexpr (std::is_same_v<S, float>) return detail::tanh_float(x);
      else return detail::per_lane(x, [](S v) { return std::tanh(v); });
    case Activation::sigmoid:
      if constexpr (std::is_same_v<S, float>) return detail::sigmoid_float(x);
      else return detail::per_lane(x, [](S v) { return S(1) / (S(1) + std::exp(-v)); });
    case Activation::hardSigmoid: {
      // SPEC.md section 2 (pinned): clamp(0.2 x + 0.5, 0, 1).
      const V y = S(0.2) * x + S(0.5);
      return y < S(0) ? V{} : (y > S(1) ? splat<V>(S(1)) : y);
    }
  }
  return x;
}

// g·act'(x) where y = act(x) is given (every derivative is a function of the activated
// value, so the saved zState is enough). relu and hardSigmoid select g or 0, as a NaN g
// times a zero derivative would not.
template <class S>
RNNGRAPH_ALWAYS_INLINE typename Vec<S>::type times_derivative(Activation act,
                                                              typename Vec<S>::type y,
                                                              typename Vec<S>::type g) {
  using V = typename Vec<S>::type;
  switch (act) {
    case Activation::none:
      return g;
    case Activation::relu:
      return y > S(0) ? g : V{};
    case Activation::tanh:
      return g * (S(1) - y * y);
    case Activation::sigmoid:
      return g * (y * (S(1) - y));
    case Activation::hardSigmoid:
      return (y > S(0)) & (y < S(1)) ? S(0.2) * g : V{};
  }
  return g;
}

}  // namespace simd

// x <- act(x) for a block, and g <- g·act'(x) from y = act(x): row by row, vector by vector.
template <class S>
void activate(Activation act, Block<S> x) {
  if (act == Activation::none) return;
  for (Index r = 0; r < x.rows(); ++r) {
    S* row = x.data() + r * x.outerStride();
    simd::for_each_vector<S>(x.cols(), [&](Index j, Index n) {
      const simd::RowVector<S> v{j, n};
      v.store(row, simd::activate<S>(act, v.load(row)));
    });
  }
}

template <class S>
void multiply_by_derivative(Activation act, ConstBlock<S> y, Block<S> g) {
  if (act == Activation::none) return;
  for (Index r = 0; r < g.rows(); ++r) {
    const S* y_row = y.data() + r * y.outerStride();
    S* g_row = g.data() + r * g.outerStride();
    simd::for_each_vector<S>(g.cols(), [&](Index j, Index n) {
      const simd::RowVector<S> v{j, n};
      v.store(g_row, simd::times_derivative<S>(act, v.load(y_row), v.load(g_row)));
    });
  }
}

}  // namespace rnngraph
