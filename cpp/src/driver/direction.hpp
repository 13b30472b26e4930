// One direction of one call (or a chunk of its batch rows): where its weights and its slices
// of the shared tensors are, and its products with R.
#pragma once

#include "arrays.hpp"
#include "gemm.hpp"
#include "packed_gemm.hpp"
#include "rnngraph/forced_paths.hpp"
#include "rnngraph/problem.hpp"

namespace rnngraph {

template <class S>
struct Direction {
  int d = 0;                         // 0: forward block, 1: reverse block of a bidirectional op
  bool reversed = false;             // processes t = T-1 ... 0 (SPEC.md section 4)
  Index T = 0, N = 0, H = 0, G = 0;  // N: the batch rows this direction (chunk) handles
  Index state_ld = 0;      // D·H: row stride of the shared [T, N, D·H] tensors and of initState
  Index batch_stride = 0;  // rows per timestep in the shared tensors (the op's whole N)
  const S* recurrentWeight = nullptr;                // [G·H, H]
  const PackedPanels<S>* weight_t_panels = nullptr;  // Rᵀ [H, G·H] packed for the forward steps
  const PackedPanels<S>* weight_panels = nullptr;    // R [G·H, H] packed for the backward steps
  ProductPath product = ProductPath::automatic;      // kernel of unpacked forward products
  const S* peephole = nullptr;                       // [4H] (LSTM)
  const S* secondaryBias = nullptr;                  // [H] (GRU)
  const S* mask = nullptr;  // [T, N, D·H] at this direction's block, or nullptr
  bool descending = false;  // the products sweep the packed panels from the back
                            // (detail::step_direction: every other step of a time loop)
  Index steps_before = 0;   // steps run before this call with the same packed weights
                            // (detail::step_sweeps_from_back: the parity of step 0)

  Index time(Index k) const { return reversed ? T - 1 - k : k; }  // k-th processed step
  Index previous(Index t) const { return reversed ? t + 1 : t - 1; }
  bool is_first(Index t) const { return t == time(0); }
  Index GH() const { return G * H; }
  const S* mask_at(Index t) const { return mask + t * batch_stride * state_ld; }

  // The forward product hm·Rᵀ is cut into units: whole panels of the packed Rᵀ when there
  // is one, else single columns (rows of R). A gate holds units_per_gate() of them.
  Index units_per_gate() const { return weight_t_panels ? weight_t_panels->per_group : H; }
  // The first column of Rᵀ that unit u holds.
  Index unit_column(Index u) const {
    return weight_t_panels ? weight_t_panels->first_column(u) : u;
  }
  // C = A·Rᵀ for the units [u0, u1), A [rows, H] (lda), C at unit u0's first column (ldc):
  // the panel kernel, or (unpacked) dot products along R's rows, the BLAS or the small kernel
  // (gemm.cpp picks, unless a product path is forced).
  void times_units_t(Index rows, Index u0, Index u1, const S* A, Index lda, S* C, Index ldc) const {
    if (weight_t_panels) {
      packed_gemm(rows, 0, H, A, lda, *weight_t_panels, u0, u1, S(0), C, ldc, descending);
    } else {
      gemm_with(product, Trans::no, Trans::yes, rows, u1 - u0, H, S(1), A, lda,
                recurrentWeight + u0 * H, H, S(0), C, ldc);
    }
  }
  // C = A·Rᵀ for the units [p0, p1) of each of the first `gates` gates (their columns of each
  // gate's block), A [rows, H] (lda), C at column 0 of Q [rows, G·H] (ldc): with the packed Rᵀ
  // one sweep over all of them (packed_gemm_units), else gate by gate (columns of R).
  void times_gate_units_t(Index rows, int gates, Index p0, Index p1, const S* A, Index lda, S* C,
                          Index ldc) const {
    if (weight_t_panels) {
      packed_gemm_units(rows, 0, H, A, lda, *weight_t_panels, gates, p0, p1, S(0), C, ldc,
                        descending);
      return;
    }
    for (int g = 0; g < gates; ++g)
      times_units_t(rows, g * H + p0, g * H + p1, A, lda, C + g * H + p0, ldc);
  }
  // C = A·R_gᵀ for the gate rows [g0, g0 + gates) of R, A [rows, H] (lda), C [rows, gates·H].
  void times_weight_t(Index rows, Index g0, Index gates, const S* A, Index lda, S* C,
                      Index ldc) const {
    const Index per_gate = units_per_gate();
    times_units_t(rows, g0 * per_gate, (g0 + gates) * per_gate, A, lda, C, ldc);
  }
  // C = beta·C + A·R_g for the gate rows [g0, g0 + gates) of R, A [rows, gates·H] (lda),
  // C [rows, H]; only the output columns [col0, col1), whole panels of the packed R (the
  // backward always packs R: its product has no cheaper unpacked form).
  void times_weight(Index rows, Index g0, Index gates, const S* A, Index lda, S beta, S* C,
                    Index ldc, Index col0 = 0, Index col1 = -1) const {
    if (col1 < 0) col1 = H;
    const Index w = weight_panels->width;
    packed_gemm(rows, g0 * H, gates * H, A, lda, *weight_panels, col0 / w, (col1 + w - 1) / w, beta,
                C + col0, ldc, descending);
  }
  // The same direction restricted to batch rows [row0, row0 + count).
  Direction rows(Index row0, Index count) const {
    Direction out = *this;
    out.N = count;
    if (mask) out.mask = mask + row0 * state_ld;
    return out;
  }
};

template <class S>
Direction<S> make_direction(const RNNShape& s, bool reverse, int d, const S* recurrentWeight,
                            const S* peephole, const S* secondaryBias, const S* mask) {
  Direction<S> dir;
  dir.d = d;
  dir.reversed = s.bidirectional ? d == 1 : reverse;
  dir.T = s.T;
  dir.N = s.N;
  dir.H = s.H;
  dir.G = s.gates;
  dir.state_ld = s.DH();
  dir.batch_stride = s.N;
  dir.recurrentWeight = recurrentWeight + d * s.GH() * s.H;
  dir.peephole = peephole ? peephole + d * 4 * s.H : nullptr;
  dir.secondaryBias = secondaryBias ? secondaryBias + d * s.H : nullptr;
  dir.mask = mask ? mask + d * s.H : nullptr;
  return dir;
}

}  // namespace rnngraph
