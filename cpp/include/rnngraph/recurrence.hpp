// The shared recurrence driver (DESIGN.md section 3). It owns the time loop, the GEMMs,
// the two directions and every buffer; a cell supplies only its element-wise gate math.
//
// A Cell provides:
//   static constexpr const char* name;                 // op name for errors
//   static constexpr bool has_cell_state;              // LSTM: a cell sequence c
//   static constexpr bool separate_recurrent_gradient; // dL/dQ differs from dL/dx'
//   int gates() const;            // G
//   int recurrent_gates() const;  // leading gates whose recurrent product hm·R_gᵀ the driver computes
//   void forward_step(const Direction<S>&, const ForwardStep<S>&) const;
//   Seq<const S> state_sequence(const Direction<S>&, const GradientArgs<S>&, CellBackwardState<S>&) const;
//   void prepare_backward(const Direction<S>&, const GradientArgs<S>&, CellBackwardState<S>&) const;
//   void backward_step(const Direction<S>&, const BackwardStep<S>&, CellBackwardState<S>&) const;
//   void finish_backward(const Direction<S>&, const GradientArgs<S>&, CellBackwardState<S>&) const;
#pragma once

#include <algorithm>
#include <vector>

#include "rnngraph/activation.hpp"
#include "rnngraph/arrays.hpp"
#include "rnngraph/gemm.hpp"
#include "rnngraph/problem.hpp"
#include "rnngraph/threads.hpp"

namespace rnngraph {

// One direction of one call: where its weights and its slices of the shared tensors are.
template <class S>
struct Direction {
  int d = 0;              // 0: forward block, 1: reverse block of a bidirectional op
  bool reversed = false;  // processes t = T-1 ... 0 (SPEC.md section 4)
  Index T = 0, N = 0, H = 0, G = 0;
  Index state_ld = 0;  // D·H: row stride of the shared [T, N, D·H] tensors and of initState
  const S* recurrentWeight = nullptr;  // [G·H, H]
  const S* recurrentWeightT = nullptr; // Rᵀ [H, G·H], packed once per forward call
  const S* peephole = nullptr;         // [4H] (LSTM)
  const S* secondaryBias = nullptr;    // [H] (GRU)
  const S* mask = nullptr;             // [T, N, D·H] offset to this direction, or nullptr
  Index mask_ld = 0;

  Index time(Index k) const { return reversed ? T - 1 - k : k; }  // k-th processed step
  Index previous(Index t) const { return reversed ? t + 1 : t - 1; }
  bool is_first(Index t) const { return t == time(0); }
  Index GH() const { return G * H; }
  const S* mask_at(Index t) const { return mask + t * N * mask_ld; }
};

// One forward step: every block is [N, ·] with its own leading dimension.
template <class S>
struct ForwardStep {
  Index t = 0;
  const S* xp = nullptr;  Index ld_xp = 0;  // x'_t = x_t·Wᵀ + b, [N, G·H]
  S* q = nullptr;         // hm·R_gᵀ for the recurrent gates, [N, G·H], ld G·H (cell may reuse)
  const S* hp = nullptr;  Index ld_hp = 0;  // previous state
  const S* hm = nullptr;  Index ld_hm = 0;  // previous state times mask
  const S* cp = nullptr;  Index ld_cp = 0;  // previous cell (LSTM)
  S* h = nullptr;         Index ld_h = 0;   // new state
  S* c = nullptr;         Index ld_c = 0;   // new cell (LSTM)
  S* gates = nullptr;     Index ld_gates = 0;  // this step's zState row
  S* scratch = nullptr;   // [N, 2H] contiguous
};

// One backward step. The cell must write dxp, dq (when separate), dhm and dhp in full.
template <class S>
struct BackwardStep {
  Index t = 0;
  S* dh = nullptr;   // dL/dh_t, [N, H] contiguous (may be clobbered)
  S* dxp = nullptr;  // out: dL/dx'_t, [N, G·H] with leading dimension ld_dxp
  S* dq = nullptr;   // out: dL/dQ_t where Q = (recurrent input)·Rᵀ (== dxp if not separate)
  Index ld_dxp = 0;
  S* dhm = nullptr;  // out: dL/dhm_t beyond dq·R over the recurrent gates, [N, H]
  S* dhp = nullptr;  // out: dL/dhp_t through paths that bypass the mask, [N, H]
  S* scratch = nullptr;  // [N, 2H]
};

// Per-direction sequences the backward pass reads, built before its time loop.
template <class S>
struct CellBackwardState {
  Seq<const S> gates;    // zState slice of this direction
  Seq<const S> hp;       // previous state for each t, [T, N, H]
  Seq<const S> hm;       // previous state times mask for each t
  Seq<const S> states;   // h_t of this direction
  std::vector<S> buffer_a, buffer_b, buffer_c;  // cell-owned sequences, filled before the loop
  std::vector<S> carry;  // LSTM: dL/dc carried to the previous step
  S* dxp_all = nullptr;  // [T·N, G·H] block of this direction, leading dimension ld_dxp
  S* dq_all = nullptr;
  Index ld_dxp = 0;
  Index N = 0, H = 0;
};

namespace detail {

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
  dir.recurrentWeight = recurrentWeight + d * s.GH() * s.H;
  dir.peephole = peephole ? peephole + d * 4 * s.H : nullptr;
  dir.secondaryBias = secondaryBias ? secondaryBias + d * s.H : nullptr;
  dir.mask = mask ? mask + d * s.H : nullptr;
  dir.mask_ld = s.DH();
  return dir;
}

// out[t] = the state before step t in processing order: seq[previous(t)], or init at the
// first processed step (zeros when init is absent). out is a dense [T, N, H] buffer.
template <class S>
void previous_sequence(const Direction<S>& dir, Seq<const S> seq, const S* init, Index init_ld,
                       S* out) {
  const Index N = dir.N, H = dir.H;
  for (Index t = 0; t < dir.T; ++t) {
    auto dst = block(out + t * N * H, N, H, H);
    if (dir.is_first(t)) {
      if (init) dst = cblock(init, N, H, init_ld);
      else dst.setZero();
    } else {
      dst = cblock(seq.at(dir.previous(t)), N, H, seq.ld);
    }
  }
}

template <class S>
void add_bias_rows(S* p, Index rows, Index cols, const S* bias) {
  if (!bias || rows == 0) return;
  block(p, rows, cols, cols).rowwise() += Eigen::Map<const Eigen::Array<S, 1, Eigen::Dynamic>>(bias, cols);
}

// out[j] = Σ_r p[r, j], rows added in order so the result never depends on alignment.
template <class S>
void column_sums(const S* p, Index rows, Index cols, Index ld, S* out) {
  Eigen::Map<Eigen::Array<S, 1, Eigen::Dynamic>> o(out, cols);
  o.setZero();
  for (Index r = 0; r < rows; ++r) o += cblock(p + r * ld, 1, cols, ld);
}

// out[j] = Σ_r a[r, j]·b[r, j], in the same fixed order.
template <class S>
void column_sums_of_products(const S* a, Index lda, const S* b, Index ldb, Index rows, Index cols,
                             S* out) {
  Eigen::Map<Eigen::Array<S, 1, Eigen::Dynamic>> o(out, cols);
  o.setZero();
  for (Index r = 0; r < rows; ++r) o += cblock(a + r * lda, 1, cols, lda) * cblock(b + r * ldb, 1, cols, ldb);
}

}  // namespace detail

// Bidirectional ops run their two directions on two threads when the recurrence is big enough
// to pay for it; a tiny problem stays on one thread (a second core must not slow it down).
constexpr Index kParallelDirectionsWork = Index(1) << 21;  // multiply-adds per direction

inline bool directions_in_parallel(const RNNShape& s, int recurrent_gates) {
  return s.D() == 2 && get_num_threads() >= 2 &&
         s.T * s.N * recurrent_gates * s.H * s.H >= kParallelDirectionsWork;
}

namespace detail {

template <class Cell, class S>
void forward_direction(const Cell& cell, const RNNShape& s, bool reverse, const ForwardArgs<S>& a,
                       int d, const S* projected) {
  const Index T = s.T, N = s.N, H = s.H, GH = s.GH(), DH = s.DH(), DGH = s.DGH();
  const Index RGH = cell.recurrent_gates() * H;
  auto dir = make_direction(s, reverse, d, a.recurrentWeight, a.peephole, a.secondaryBias, a.mask);

  // This direction's workspace, allocated once before its time loop.
  std::vector<S> weight_t(static_cast<size_t>(H * GH));
  block(weight_t.data(), H, GH, GH) = cblock(dir.recurrentWeight, GH, H, H).transpose();
  dir.recurrentWeightT = weight_t.data();
  std::vector<S> recurrent(static_cast<size_t>(N * GH));
  std::vector<S> masked(static_cast<size_t>(a.mask ? N * H : 0));
  std::vector<S> zeros(static_cast<size_t>(N * H), S(0));
  std::vector<S> gate_scratch(static_cast<size_t>(a.zState ? 0 : N * GH));
  std::vector<S> step_scratch(static_cast<size_t>(2 * N * H));

  const Seq<S> h_seq{a.output + d * H, N * DH, DH};
  const Seq<S> c_seq{Cell::has_cell_state ? a.cellOutput + d * H : nullptr, N * DH, DH};
  const Seq<S> z_seq = a.zState ? Seq<S>{a.zState + d * GH, N * DGH, DGH}
                                : Seq<S>{gate_scratch.data(), 0, GH};
  const S* h0 = a.initState ? a.initState + d * H : zeros.data();
  const Index h0_ld = a.initState ? DH : H;
  const S* c0 = a.initCell ? a.initCell + d * H : zeros.data();
  const Index c0_ld = a.initCell ? DH : H;

  for (Index k = 0; k < T; ++k) {
    const Index t = dir.time(k);
    ForwardStep<S> step;
    step.t = t;
    step.xp = projected + t * N * DGH + d * GH;
    step.ld_xp = DGH;
    step.q = recurrent.data();
    if (k == 0) {
      step.hp = h0; step.ld_hp = h0_ld;
      step.cp = c0; step.ld_cp = c0_ld;
    } else {
      step.hp = h_seq.at(dir.previous(t)); step.ld_hp = DH;
      step.cp = Cell::has_cell_state ? c_seq.at(dir.previous(t)) : nullptr; step.ld_cp = DH;
    }
    // SPEC.md section 5: the mask scales the previous state inside recurrent products only.
    if (a.mask) {
      block(masked.data(), N, H, H) =
          cblock(step.hp, N, H, step.ld_hp) * cblock(dir.mask_at(t), N, H, dir.mask_ld);
      step.hm = masked.data(); step.ld_hm = H;
    } else {
      step.hm = step.hp; step.ld_hm = step.ld_hp;
    }
    // One GEMM per step over every recurrent gate: Q = hm·Rᵀ, [N, H] x [H, G·H].
    gemm(Trans::no, Trans::no, N, RGH, H, S(1), step.hm, step.ld_hm, dir.recurrentWeightT, GH,
         S(0), step.q, GH);
    step.h = h_seq.at(t); step.ld_h = DH;
    step.c = Cell::has_cell_state ? c_seq.at(t) : nullptr; step.ld_c = DH;
    step.gates = z_seq.at(t); step.ld_gates = z_seq.ld;
    step.scratch = step_scratch.data();
    cell.forward_step(dir, step);
  }
}

template <class Cell, class S>
void backward_direction(const Cell& cell, const RNNShape& s, bool reverse,
                        const GradientArgs<S>& a, int d, S* dxp_all, S* dq_all) {
  const Index T = s.T, N = s.N, H = s.H, GH = s.GH(), DH = s.DH(), DGH = s.DGH();
  const Index TN = T * N;
  const Index RGH = cell.recurrent_gates() * H;
  const auto dir = make_direction(s, reverse, d, a.recurrentWeight, a.peephole, a.secondaryBias, a.mask);

  // This direction's workspace, allocated once before its time loop.
  std::vector<S> hp_all(static_cast<size_t>(TN * H));
  std::vector<S> hm_all(static_cast<size_t>(a.mask ? TN * H : 0));
  std::vector<S> dh(static_cast<size_t>(N * H)), dh_next(static_cast<size_t>(N * H));
  std::vector<S> dhm(static_cast<size_t>(N * H)), dhp(static_cast<size_t>(N * H));
  std::vector<S> step_scratch(static_cast<size_t>(2 * N * H));
  CellBackwardState<S> state;
  state.N = N;
  state.H = H;
  state.gates = Seq<const S>{a.zState + d * GH, N * DGH, DGH};
  state.states = cell.state_sequence(dir, a, state);
  previous_sequence(dir, state.states, a.initState ? a.initState + d * H : nullptr, DH, hp_all.data());
  state.hp = Seq<const S>{hp_all.data(), N * H, H};
  if (a.mask) {
    for (Index t = 0; t < T; ++t) {
      block(hm_all.data() + t * N * H, N, H, H) =
          cblock(hp_all.data() + t * N * H, N, H, H) * cblock(dir.mask_at(t), N, H, dir.mask_ld);
    }
    state.hm = Seq<const S>{hm_all.data(), N * H, H};
  } else {
    state.hm = state.hp;
  }
  state.dxp_all = dxp_all + d * GH;
  state.dq_all = dq_all + d * GH;
  state.ld_dxp = DGH;
  cell.prepare_backward(dir, a, state);

  // dL/d(final state) enters at the last processed step (SPEC.md section 6).
  auto carry = block(dh_next.data(), N, H, H);
  if (a.stateGradient) carry = cblock(a.stateGradient + d * H, N, H, DH);
  else carry.setZero();

  for (Index k = T - 1; k >= 0; --k) {
    const Index t = dir.time(k);
    block(dh.data(), N, H, H) = cblock(a.sourceGradient + t * N * DH + d * H, N, H, DH) + carry;
    BackwardStep<S> step;
    step.t = t;
    step.dh = dh.data();
    step.dxp = state.dxp_all + t * N * DGH;
    step.dq = state.dq_all + t * N * DGH;
    step.ld_dxp = DGH;
    step.dhm = dhm.data();
    step.dhp = dhp.data();
    step.scratch = step_scratch.data();
    cell.backward_step(dir, step, state);
    // dL/dhm += dQ_t·R over the recurrent gates: one GEMM per step, [N, G·H] x [G·H, H].
    gemm(Trans::no, Trans::no, N, H, RGH, S(1), step.dq, DGH, dir.recurrentWeight, H, S(1),
         dhm.data(), H);
    if (a.mask) {
      carry = cblock(dhm.data(), N, H, H) * cblock(dir.mask_at(t), N, H, dir.mask_ld) +
              cblock(dhp.data(), N, H, H);
    } else {
      carry = cblock(dhm.data(), N, H, H) + cblock(dhp.data(), N, H, H);
    }
  }
  if (a.initStateGrad) block(a.initStateGrad + d * H, N, H, DH) = carry;

  // dR = Σ_t dQ_tᵀ·hm_t: one GEMM over all T·N rows after the loop.
  gemm(Trans::yes, Trans::no, RGH, H, TN, S(1), state.dq_all, DGH, state.hm.base, H, S(0),
       a.recurrentWeightGrad + d * GH * H, H);
  cell.finish_backward(dir, a, state);
}

}  // namespace detail

template <class Cell, class S>
void recurrent_forward(const Cell& cell, const RNNShape& s, bool reverse, const ForwardArgs<S>& a) {
  validate_shape(s, Cell::name);
  require(a.source && a.recurrentWeight && a.output, std::string(Cell::name) + ": missing buffer");
  require(!Cell::has_cell_state || a.cellOutput, std::string(Cell::name) + ": missing cell buffer");
  FlushDenormals flush;
  const Index TN = s.T * s.N, DGH = s.DGH();

  // SPEC.md section 5: x'[t] = x[t]·Wᵀ + b for every step and both directions at once,
  // one GEMM [T·N, I] x [I, D·G·H] (without W the source already holds x' - b).
  std::vector<S> projected(static_cast<size_t>(TN * DGH));
  if (s.has_input_weight) {
    gemm(Trans::no, Trans::yes, TN, DGH, s.I, S(1), a.source, s.I, a.inputWeight, s.I, S(0),
         projected.data(), DGH);
  } else {
    std::copy(a.source, a.source + TN * DGH, projected.data());
  }
  detail::add_bias_rows(projected.data(), TN, DGH, a.bias);

  run_parts(s.D(), directions_in_parallel(s, cell.recurrent_gates()), [&](int d) {
    detail::forward_direction(cell, s, reverse, a, d, projected.data());
  });
}

template <class Cell, class S>
void recurrent_gradients(const Cell& cell, const RNNShape& s, bool reverse,
                         const GradientArgs<S>& a) {
  validate_shape(s, Cell::name);
  require(a.source && a.recurrentWeight && a.sourceGradient && a.zState && a.sourceGrad &&
              a.recurrentWeightGrad,
          std::string(Cell::name) + ": missing buffer");
  FlushDenormals flush;
  const Index TN = s.T * s.N, I = s.I, DGH = s.DGH();

  // dL/dx' for every step and both directions, [T·N, D·G·H]. Without W the source is x'
  // itself and this is its gradient (SPEC.md section 6), so it is written there directly.
  std::vector<S> dxp_buffer(static_cast<size_t>(s.has_input_weight ? TN * DGH : 0));
  S* dxp_all = s.has_input_weight ? dxp_buffer.data() : a.sourceGrad;
  std::vector<S> dq_buffer(static_cast<size_t>(Cell::separate_recurrent_gradient ? TN * DGH : 0));
  S* dq_all = Cell::separate_recurrent_gradient ? dq_buffer.data() : dxp_all;

  run_parts(s.D(), directions_in_parallel(s, cell.recurrent_gates()), [&](int d) {
    detail::backward_direction(cell, s, reverse, a, d, dxp_all, dq_all);
  });

  // Input-side gradients for both directions at once, one GEMM each over all T·N rows.
  if (s.has_input_weight) {
    if (a.inputWeightGrad) {
      gemm(Trans::yes, Trans::no, DGH, I, TN, S(1), dxp_all, DGH, a.source, I, S(0),
           a.inputWeightGrad, I);
    }
    gemm(Trans::no, Trans::no, TN, I, DGH, S(1), dxp_all, DGH, a.inputWeight, I, S(0),
         a.sourceGrad, I);
  }
  if (a.biasGrad) detail::column_sums(dxp_all, TN, DGH, DGH, a.biasGrad);
}

}  // namespace rnngraph
