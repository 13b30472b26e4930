// The shared recurrence driver (DESIGN.md section 3). It owns the time loop, the GEMMs,
// the two directions and every buffer; a cell supplies only its element-wise gate math.
//
// A Cell provides:
//   static constexpr const char* name;                 // op name for errors
//   static constexpr bool has_cell_state;              // LSTM: a cell sequence c
//   static constexpr bool separate_recurrent_gradient; // dL/dQ differs from dL/dx'
//   static constexpr bool rebuilds_states_in_loop;     // h_t is rebuilt by the backward steps
//   static constexpr bool direct_state_gradient;       // dL/dhp has terms beyond dQ·R (dhm, dhp)
//   int recurrent_gates() const;  // leading gates whose recurrent product hm·R_gᵀ the driver computes
//   void forward_step(const Direction<S>&, const ForwardStep<S>&) const;
//   Seq<const S> state_sequence(const Direction<S>&, CellBackwardState<S>&) const;   // h_t
//     (only without rebuilds_states_in_loop; with it, each backward step writes h_t, masked,
//     to BackwardStep::next_state, and the driver writes only the first step's hm)
//   void prepare_backward(const Direction<S>&, CellBackwardState<S>&) const;
//   void backward_step(const Direction<S>&, const BackwardStep<S>&, const BackwardViews<S>&) const;
//   void finish_backward(const Direction<S>&, const GradientArgs<S>&, CellBackwardState<S>&) const;
// The step functions see a chunk of batch rows (Direction::N rows); the others see them all.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "rnngraph/activation.hpp"
#include "rnngraph/arrays.hpp"
#include "rnngraph/gemm.hpp"
#include "rnngraph/packed_weights.hpp"
#include "rnngraph/problem.hpp"
#include "rnngraph/step_views.hpp"
#include "rnngraph/threads.hpp"
#include "rnngraph/work_split.hpp"
#include "rnngraph/workspace.hpp"

namespace rnngraph {

namespace detail {

// The forward packs Rᵀ into panels once per call (packed_gemm.hpp) when T·N reaches
// kPackWeightsRows and the batch reaches kPackWeightsBatch or the hidden size is at most
// kPackWeightsHidden: a batch of a few rows streams R's own rows as dot products faster than
// a copy is made. (The backward always packs R.)
constexpr Index kPackWeightsRows = 32;
constexpr Index kPackWeightsBatch = 16;
constexpr Index kPackWeightsHidden = 128;

inline bool pack_weights(const RNNShape& s) {
  return s.T * s.N >= kPackWeightsRows && (s.N >= kPackWeightsBatch || s.H <= kPackWeightsHidden);
}

// Thread p of `team` takes the units [p·units/team, (p+1)·units/team) of a split, in `step`s.
inline std::pair<Index, Index> team_share(int p, int team, Index units, Index step) {
  const Index blocks = (units + step - 1) / step;
  return {std::min(units, blocks * p / team * step), std::min(units, blocks * (p + 1) / team * step)};
}

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

// f(t) for every step t of a pass over whole sequences (before or after the time loops),
// the steps shared among the threads when the pass is large: the passes are independent
// per step, and a single thread would leave the others idle.
constexpr Index kParallelPass = Index(1) << 18;  // elements worth a second thread

template <class F>
void for_each_step(Index T, Index elements_per_step, F&& f) {
  const int threads = threads_for(T * elements_per_step, kParallelPass, T);
  run_parts(threads, threads > 1, [&](int p) {
    for (Index t = T * p / threads; t < T * (p + 1) / threads; ++t) f(t);
  });
}

// out[t] = the state before step t in processing order: seq[previous(t)], or init at the
// first processed step (zeros when init is absent). out is a dense [T, N, H] buffer.
template <class S>
void previous_sequence(const Direction<S>& dir, Seq<const S> seq, const S* init, Index init_ld,
                       S* out) {
  const Index N = dir.N, H = dir.H;
  for_each_step(dir.T, N * H, [&](Index t) {
    auto dst = block(out + t * N * H, N, H, H);
    if (dir.is_first(t)) {
      if (init) dst = cblock(init, N, H, init_ld);
      else dst.setZero();
    } else {
      dst = cblock(seq.at(dir.previous(t)), N, H, seq.ld);
    }
  });
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

// The gradient carried to the previous step: dL/dhp = dL/dhm ⊙ m + (the paths that bypass
// the mask), for a [rows, cols] block of dhm, dhp and carry (leading dimension ld).
template <class S>
void carry_to_previous(Index rows, Index cols, Index ld, const S* dhm, const S* dhp,
                       const S* mask, Index mask_ld, S* carry) {
  auto out = block(carry, rows, cols, ld);
  if (mask) {
    out = cblock(dhm, rows, cols, ld) * cblock(mask, rows, cols, mask_ld) + cblock(dhp, rows, cols, ld);
  } else {
    out = cblock(dhm, rows, cols, ld) + cblock(dhp, rows, cols, ld);
  }
}

// dL/dh of the previous step, output columns [col0, col1) of a [rows, H] block: dQ_t·R over
// the recurrent gates (one GEMM per step, [rows, G·H] x [G·H, H]), plus the cell's own dhm
// (masked with the product) and dhp when it has direct state gradients. Without them (LSTM,
// single-gate RNN) the cell writes neither, and the product goes straight to the carry
// unless a mask must scale it.
template <class Cell, class S>
void gradient_to_previous(const Cell& cell, const Direction<S>& dir, Index rows, const S* dq,
                          Index ld_dq, S* dhm, const S* dhp, const S* mask, Index mask_ld, S* carry,
                          Index col0, Index col1) {
  const Index H = dir.H, cols = col1 - col0;
  const int gates = cell.recurrent_gates();
  if constexpr (Cell::direct_state_gradient) {
    dir.times_weight(rows, 0, gates, dq, ld_dq, S(1), dhm, H, col0, col1);
    carry_to_previous(rows, cols, H, dhm + col0, dhp + col0, mask ? mask + col0 : nullptr, mask_ld,
                      carry + col0);
  } else if (mask) {
    dir.times_weight(rows, 0, gates, dq, ld_dq, S(0), dhm, H, col0, col1);
    block(carry + col0, rows, cols, H) =
        cblock(dhm + col0, rows, cols, H) * cblock(mask + col0, rows, cols, mask_ld);
  } else {
    dir.times_weight(rows, 0, gates, dq, ld_dq, S(0), carry, H, col0, col1);
  }
}

// Up to this many rows of x, the input projection streams packed weights (when there are
// some) with the panel kernel; more rows go to the BLAS, which blocks x for its caches.
constexpr Index kPackedProjectionRows = 256;
constexpr Index kParallelProjection = Index(1) << 19;  // multiply-adds worth a second thread

// x' = x·Wᵀ for every step and both directions, [T·N, D·G·H] (bias added by the caller).
template <class S>
void project_inputs(const RNNShape& s, const ForwardArgs<S>& a, S* projected) {
  const Index TN = s.T * s.N, DGH = s.DGH();
  if (!a.packed || TN > kPackedProjectionRows) {
    gemm(Trans::no, Trans::yes, TN, DGH, s.I, S(1), a.source, s.I, a.inputWeight, s.I, S(0),
         projected, DGH);
    return;
  }
  const PackedPanels<S>& w = a.packed->input_t;
  const Index panels = w.panels();
  const int threads = threads_for(TN * DGH * s.I, kParallelProjection, panels);
  run_parts(threads, threads > 1, [&](int p) {
    const Index first = panels * p / threads, last = panels * (p + 1) / threads;
    if (last > first) {
      packed_gemm(TN, 0, s.I, a.source, s.I, w, first, last, S(0), projected + w.first_column(first), DGH);
    }
  });
}

// Where one direction's forward steps read and write, for all of its batch rows.
template <class S>
struct ForwardSequences {
  Seq<S> h, c, gates;  // h_t, c_t (LSTM) and zState (or a scratch row when not training)
  const S* h0 = nullptr;  Index h0_ld = 0;  // initial state and cell (zeros when absent)
  const S* c0 = nullptr;  Index c0_ld = 0;
  const S* projected = nullptr;  Index xp_step = 0, xp_ld = 0;  // x·Wᵀ (or x' − b)
  const S* bias = nullptr;  // this direction's b, added by the cell's step
  Buffer<S> zeros, gate_scratch;

  // Step k (time t) for the batch rows from row0 on; q, hm and scratch are the caller's.
  ForwardStep<S> step(const Direction<S>& dir, Index k, Index t, Index row0) const {
    ForwardStep<S> st;
    st.t = t;
    st.xp = projected + t * xp_step + row0 * xp_ld;
    st.ld_xp = xp_ld;
    st.bias = bias;
    if (k == 0) {
      st.hp = h0 + row0 * h0_ld; st.ld_hp = h0_ld;
      st.cp = c.base ? c0 + row0 * c0_ld : nullptr; st.ld_cp = c0_ld;
    } else {
      const Index p = dir.previous(t);
      st.hp = h.at(p) + row0 * h.ld; st.ld_hp = h.ld;
      st.cp = c.base ? c.at(p) + row0 * c.ld : nullptr; st.ld_cp = c.ld;
    }
    st.h = h.at(t) + row0 * h.ld; st.ld_h = h.ld;
    st.c = c.base ? c.at(t) + row0 * c.ld : nullptr; st.ld_c = c.ld;
    st.gates = gates.at(t) + row0 * gates.ld; st.ld_gates = gates.ld;
    return st;
  }
};

template <class Cell, class S>
ForwardSequences<S> forward_sequences(const RNNShape& s, const ForwardArgs<S>& a, int d,
                                      const S* projected) {
  const Index N = s.N, H = s.H, GH = s.GH(), DH = s.DH(), DGH = s.DGH();
  ForwardSequences<S> f;
  f.zeros.resize(static_cast<size_t>(N * H));
  std::fill(f.zeros.data(), f.zeros.data() + N * H, S(0));
  f.h = Seq<S>{a.output + d * H, N * DH, DH};
  f.c = Seq<S>{Cell::has_cell_state ? a.cellOutput + d * H : nullptr, N * DH, DH};
  if (a.zState) {
    f.gates = Seq<S>{a.zState + d * GH, N * DGH, DGH};
  } else {
    f.gate_scratch.resize(static_cast<size_t>(N * GH));
    f.gates = Seq<S>{f.gate_scratch.data(), 0, GH};
  }
  f.h0 = a.initState ? a.initState + d * H : f.zeros.data();
  f.h0_ld = a.initState ? DH : H;
  f.c0 = a.initCell ? a.initCell + d * H : f.zeros.data();
  f.c0_ld = a.initCell ? DH : H;
  f.projected = projected + d * GH;
  f.bias = a.bias ? a.bias + d * GH : nullptr;
  f.xp_step = N * DGH;
  f.xp_ld = DGH;
  return f;
}

// The forward time loop of one direction over its chunk of batch rows.
template <class Cell, class S>
void forward_rows(const Cell& cell, const RNNShape& s, const ForwardArgs<S>& a,
                  const Direction<S>& whole, const Part& part, const ForwardSequences<S>& seqs) {
  const Index T = s.T, H = s.H, GH = s.GH(), DH = s.DH();
  const Index N = part.rows, r0 = part.row0;
  const Direction<S> dir = whole.rows(r0, N);

  // This chunk's workspace, allocated once before its time loop.
  std::vector<S> recurrent(static_cast<size_t>(N * GH));
  std::vector<S> masked(static_cast<size_t>(a.mask ? N * H : 0));
  std::vector<S> step_scratch(static_cast<size_t>(2 * N * H));

  for (Index k = 0; k < T; ++k) {
    const Index t = dir.time(k);
    ForwardStep<S> step = seqs.step(dir, k, t, r0);
    step.q = recurrent.data();
    step.scratch = step_scratch.data();
    // SPEC.md section 5: the mask scales the previous state inside recurrent products only.
    if (a.mask) {
      block(masked.data(), N, H, H) =
          cblock(step.hp, N, H, step.ld_hp) * cblock(dir.mask_at(t), N, H, DH);
      step.hm = masked.data(); step.ld_hm = H;
    } else {
      step.hm = step.hp; step.ld_hm = step.ld_hp;
    }
    // One GEMM per step over every recurrent gate: Q = hm·Rᵀ, [N, H] x [H, G·H].
    dir.times_weight_t(N, 0, cell.recurrent_gates(), step.hm, step.ld_hm, step.q, GH);
    cell.forward_step(dir, step);
  }
}

// The backward time loop of one direction over its chunk of batch rows.
template <class Cell, class S>
void backward_rows(const Cell& cell, const RNNShape& s, const GradientArgs<S>& a,
                   const Direction<S>& whole, const Part& part, const CellBackwardState<S>& state) {
  const Index T = s.T, H = s.H, DH = s.DH(), stride = s.N;
  const Index N = part.rows, r0 = part.row0, d = part.d;
  const Direction<S> dir = whole.rows(r0, N);
  const BackwardViews<S> views = state.views.rows(r0);

  // This chunk's workspace, allocated once before its time loop.
  std::vector<S> dh(static_cast<size_t>(N * H)), dh_next(static_cast<size_t>(N * H));
  std::vector<S> dhm(static_cast<size_t>(N * H)), dhp(static_cast<size_t>(N * H));
  std::vector<S> step_scratch(static_cast<size_t>(2 * N * H));

  // dL/d(final state) enters at the last processed step (SPEC.md section 6).
  auto carry = block(dh_next.data(), N, H, H);
  if (a.stateGradient) carry = cblock(a.stateGradient + r0 * DH + d * H, N, H, DH);
  else carry.setZero();

  for (Index k = T - 1; k >= 0; --k) {
    const Index t = dir.time(k);
    block(dh.data(), N, H, H) =
        cblock(a.sourceGradient + (t * stride + r0) * DH + d * H, N, H, DH) + carry;
    BackwardStep<S> step = state.step(t, r0);
    if constexpr (Cell::rebuilds_states_in_loop) state.set_next_state(step, dir, k, r0);
    step.dh = dh.data();
    step.dhm = dhm.data();
    step.dhp = dhp.data();
    step.scratch = step_scratch.data();
    cell.backward_step(dir, step, views);
    gradient_to_previous(cell, dir, N, step.dq, state.ld_dxp, dhm.data(), dhp.data(),
                         a.mask ? dir.mask_at(t) : nullptr, DH, dh_next.data(), 0, H);
  }
  if (a.initStateGrad) block(a.initStateGrad + r0 * DH + d * H, N, H, DH) = carry;
}

// One direction shared by `team` threads, step by step: each thread computes its slice of
// the gate columns of the recurrent product (streaming only its slice of R, which stays in
// its cache), then its rows of the element-wise step; a barrier separates the phases.
template <class Cell, class S>
void forward_team(const Cell& cell, const RNNShape& s, const ForwardArgs<S>& a,
                  const Direction<S>& dir, const ForwardSequences<S>& seqs, int team) {
  const Index T = s.T, N = s.N, H = s.H, GH = s.GH(), DH = s.DH();
  const Index RGH = cell.recurrent_gates() * H;
  std::vector<S> recurrent(static_cast<size_t>(N * GH));
  std::vector<S> masked(static_cast<size_t>(a.mask ? N * H : 0));
  SpinBarrier barrier(team);

  // Each thread's gate columns: whole panels of the packed Rᵀ, or runs of 16 columns of R.
  const PackedPanels<S>* panels = dir.weight_t_panels;
  const Index units = panels ? cell.recurrent_gates() * panels->per_group : RGH;
  const Index unit_step = panels ? 1 : 16;

  run_parts(team, true, [&](int p) {
    const auto [u0, u1] = team_share(p, team, units, unit_step);
    const Index r0 = N * p / team, rows = N * (p + 1) / team - r0;
    const Direction<S> mine = dir.rows(r0, rows);
    std::vector<S> step_scratch(static_cast<size_t>(2 * rows * H));
    // This thread's rows of the masked previous state for step k.
    auto mask_rows = [&](Index k) {
      const ForwardStep<S> next = seqs.step(mine, k, dir.time(k), r0);
      block(masked.data() + r0 * H, rows, H, H) =
          cblock(next.hp, rows, H, next.ld_hp) * cblock(mine.mask_at(next.t), rows, H, DH);
    };
    if (a.mask && T > 0) mask_rows(0);
    barrier.wait();
    for (Index k = 0; k < T; ++k) {
      const Index t = dir.time(k);
      const ForwardStep<S> all = seqs.step(dir, k, t, 0);
      const S* hm = a.mask ? masked.data() : all.hp;
      const Index ld_hm = a.mask ? H : all.ld_hp;
      // Phase 1: this thread's gate columns of Q = hm·Rᵀ.
      if (u1 > u0) {
        if (panels) {
          const Index col0 = panels->first_column(u0);
          packed_gemm(N, 0, H, hm, ld_hm, *panels, u0, u1, S(0), recurrent.data() + col0, GH);
        } else {
          gemm(Trans::no, Trans::yes, N, u1 - u0, H, S(1), hm, ld_hm, dir.recurrentWeight + u0 * H, H,
               S(0), recurrent.data() + u0, GH);
        }
      }
      barrier.wait();
      // Phase 2: this thread's rows of the element-wise step (and of the next masked state).
      if (rows > 0) {
        ForwardStep<S> step = seqs.step(mine, k, t, r0);
        step.q = recurrent.data() + r0 * GH;
        step.hm = hm + r0 * ld_hm; step.ld_hm = ld_hm;
        step.scratch = step_scratch.data();
        cell.forward_step(mine, step);
        if (a.mask && k + 1 < T) mask_rows(k + 1);
      }
      barrier.wait();
    }
  });
}

// The backward loop of one direction shared by `team` threads: rows of the element-wise step,
// a barrier, then each thread's columns of dL/dhm = dQ·R, and a barrier.
template <class Cell, class S>
void backward_team(const Cell& cell, const RNNShape& s, const GradientArgs<S>& a,
                   const Direction<S>& dir, const CellBackwardState<S>& state, int team) {
  const Index T = s.T, N = s.N, H = s.H, DH = s.DH();
  const Index ld = state.ld_dxp;
  std::vector<S> carry(static_cast<size_t>(N * H)), dhm(static_cast<size_t>(N * H));
  std::vector<S> dhp(static_cast<size_t>(N * H));
  // dL/d(final state) enters at the last processed step (SPEC.md section 6).
  if (a.stateGradient) block(carry.data(), N, H, H) = cblock(a.stateGradient, N, H, DH);
  SpinBarrier barrier(team);

  // Each thread's columns of dL/dhm: whole panels of the packed R.
  const Index unit_step = dir.weight_panels->width;

  run_parts(team, true, [&](int p) {
    const auto [col0, col1] = team_share(p, team, H, unit_step);
    const Index r0 = N * p / team, rows = N * (p + 1) / team - r0;
    const Direction<S> mine = dir.rows(r0, rows);
    const BackwardViews<S> views = state.views.rows(r0);
    std::vector<S> dh(static_cast<size_t>(rows * H)), step_scratch(static_cast<size_t>(2 * rows * H));
    for (Index k = T - 1; k >= 0; --k) {
      const Index t = dir.time(k);
      // Phase 1: this thread's rows of the element-wise step.
      if (rows > 0) {
        block(dh.data(), rows, H, H) = cblock(a.sourceGradient + (t * N + r0) * DH, rows, H, DH) +
                                       cblock(carry.data() + r0 * H, rows, H, H);
        BackwardStep<S> step = state.step(t, r0);
        if constexpr (Cell::rebuilds_states_in_loop) state.set_next_state(step, mine, k, r0);
        step.dh = dh.data();
        step.dhm = dhm.data() + r0 * H;
        step.dhp = dhp.data() + r0 * H;
        step.scratch = step_scratch.data();
        cell.backward_step(mine, step, views);
      }
      barrier.wait();
      // Phase 2: this thread's columns of dL/dhm += dQ_t·R, then of the carried gradient.
      if (col1 > col0) {
        gradient_to_previous(cell, dir, N, state.dq_all + t * N * ld, ld, dhm.data(), dhp.data(),
                             a.mask ? dir.mask_at(t) : nullptr, DH, carry.data(), col0, col1);
      }
      barrier.wait();
    }
  });
  if (a.initStateGrad) block(a.initStateGrad, N, H, DH) = block(carry.data(), N, H, H);
}

// The previous-state sequences from the cell's h_t, for all rows: hp, and hm = hp ⊙ mask.
template <class Cell, class S>
void prepare_states(const Cell& cell, const GradientArgs<S>& a, const Direction<S>& dir,
                    CellBackwardState<S>& state, Buffer<S>& hp_all, Buffer<S>& hm_all) {
  const Index T = dir.T, N = dir.N, H = dir.H, DH = dir.state_ld, d = dir.d;
  state.views.states = cell.state_sequence(dir, state);
  hp_all.resize(static_cast<size_t>(T * N * H));
  previous_sequence(dir, state.views.states, a.initState ? a.initState + d * H : nullptr, DH,
                    hp_all.data());
  state.views.hp = Seq<const S>{hp_all.data(), N * H, H};
  if (a.mask) {
    hm_all.resize(static_cast<size_t>(T * N * H));
    for_each_step(T, N * H, [&](Index t) {
      block(hm_all.data() + t * N * H, N, H, H) =
          cblock(hp_all.data() + t * N * H, N, H, H) * cblock(dir.mask_at(t), N, H, DH);
    });
    state.views.hm = Seq<const S>{hm_all.data(), N * H, H};
  } else {
    state.views.hm = state.views.hp;
  }
}

// For a cell that rebuilds h_t in its backward steps: hm of the first processed step only
// (initState ⊙ mask, or zeros); each backward step writes the next one's (BackwardStep::
// next_state), so no pass over the whole sequence precedes the loop.
template <class S>
void prepare_first_state(const GradientArgs<S>& a, const Direction<S>& dir,
                         CellBackwardState<S>& state, Buffer<S>& hm_all) {
  const Index T = dir.T, N = dir.N, H = dir.H, DH = dir.state_ld;
  hm_all.resize(static_cast<size_t>(T * N * H));
  state.hm_out = Seq<S>{hm_all.data(), N * H, H};
  state.views.hm = as_const(state.hm_out);
  if (T == 0) return;
  const Index t0 = dir.time(0);
  auto first = block(state.hm_out.at(t0), N, H, H);
  if (!a.initState) first.setZero();
  else if (a.mask) first = cblock(a.initState + dir.d * H, N, H, DH) * cblock(dir.mask_at(t0), N, H, DH);
  else first = cblock(a.initState + dir.d * H, N, H, DH);
}

// Everything one direction's backward loop reads, built for all rows before the loop.
template <class Cell, class S>
void prepare_direction(const Cell& cell, const RNNShape& s, const GradientArgs<S>& a,
                       const Direction<S>& dir, S* dxp_all, S* dq_all, CellBackwardState<S>& state,
                       Buffer<S>& hp_all, Buffer<S>& hm_all) {
  const Index N = s.N, H = s.H, GH = s.GH(), DH = s.DH(), DGH = s.DGH(), d = dir.d;
  state.views.H = H;
  state.views.gates = Seq<const S>{a.zState + d * GH, N * DGH, DGH};
  state.cell_fwd = Seq<const S>{a.cellOutputFwd ? a.cellOutputFwd + d * H : nullptr, N * DH, DH};
  state.output_fwd = Seq<const S>{a.outputFwd ? a.outputFwd + d * H : nullptr, N * DH, DH};
  state.init_cell = a.initCell ? a.initCell + d * H : nullptr;
  state.cell_gradient = a.cellGradient ? a.cellGradient + d * H : nullptr;
  state.init_cell_grad = a.initCellGrad ? a.initCellGrad + d * H : nullptr;
  if constexpr (Cell::rebuilds_states_in_loop) prepare_first_state(a, dir, state, hm_all);
  else prepare_states(cell, a, dir, state, hp_all, hm_all);
  state.dxp_all = dxp_all + d * GH;
  state.dq_all = dq_all + d * GH;
  state.ld_dxp = DGH;
  state.batch_stride = N;
  cell.prepare_backward(dir, state);
}

}  // namespace detail

template <class Cell, class S>
void recurrent_forward(const Cell& cell, const RNNShape& s, bool reverse, const ForwardArgs<S>& a) {
  validate_shape(s, Cell::name);
  require(a.source && a.recurrentWeight && a.output, std::string(Cell::name) + ": missing buffer");
  require(!a.packed || a.packed->matches(s), std::string(Cell::name) + ": packed weights of another shape");
  require(!Cell::has_cell_state || a.cellOutput, std::string(Cell::name) + ": missing cell buffer");
  FlushDenormals flush;
  const Index TN = s.T * s.N, DGH = s.DGH();

  // SPEC.md section 5: x'[t] = x[t]·Wᵀ + b for every step and both directions at once,
  // one GEMM [T·N, I] x [I, D·G·H] (without W the source already holds x' − b). The bias is
  // added by each step, on rows it reads anyway. When training, x·Wᵀ is written into zState,
  // which has its layout: each step then turns its own rows into the gates in place (no
  // buffer of the projection, and half the memory traffic of the steps).
  const bool into_gates = s.has_input_weight && a.zState;
  Buffer<S> projection(static_cast<size_t>(s.has_input_weight && !into_gates ? TN * DGH : 0));
  S* projection_out = into_gates ? a.zState : projection.data();
  if (s.has_input_weight) detail::project_inputs(s, a, projection_out);
  const S* projected = s.has_input_weight ? projection_out : a.source;

  // Rᵀ [H, G·H] packed per direction for the steps' products: earlier (a.packed), or now.
  const bool pack = !a.packed && detail::pack_weights(s);
  std::vector<PackedPanels<S>> weights_t(static_cast<size_t>(pack ? s.D() : 0));
  std::vector<Direction<S>> dirs;
  for (int d = 0; d < s.D(); ++d) {
    dirs.push_back(detail::make_direction(s, reverse, d, a.recurrentWeight, a.peephole,
                                          a.secondaryBias, a.mask));
    if (a.packed) {
      dirs.back().weight_t_panels = &a.packed->recurrent_t[static_cast<size_t>(d)];
    } else if (pack) {
      auto& wt = weights_t[static_cast<size_t>(d)];
      pack_panels(dirs.back().recurrentWeight, 1, s.H, s.H, s.gates, s.H, wt);
      dirs.back().weight_t_panels = &wt;
    }
  }
  std::vector<detail::ForwardSequences<S>> seqs;
  for (int d = 0; d < s.D(); ++d) seqs.push_back(detail::forward_sequences<Cell>(s, a, d, projected));
  const auto split = detail::split_work(s, cell.recurrent_gates(), sizeof(S));
  if (split.team > 1) return detail::forward_team(cell, s, a, dirs[0], seqs[0], split.team);
  run_parts(static_cast<int>(split.parts.size()), split.parallel, [&](int i) {
    const auto& part = split.parts[static_cast<size_t>(i)];
    const auto d = static_cast<size_t>(part.d);
    detail::forward_rows(cell, s, a, dirs[d], part, seqs[d]);
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
  const Index TN = s.T * s.N, I = s.I, H = s.H, GH = s.GH(), DGH = s.DGH();
  const Index RGH = cell.recurrent_gates() * H;

  // dL/dx' for every step and both directions, [T·N, D·G·H]. Without W the source is x'
  // itself and this is its gradient (SPEC.md section 6), so it is written there directly.
  Buffer<S> dxp_buffer(static_cast<size_t>(s.has_input_weight ? TN * DGH : 0));
  S* dxp_all = s.has_input_weight ? dxp_buffer.data() : a.sourceGrad;
  Buffer<S> dq_buffer(static_cast<size_t>(Cell::separate_recurrent_gradient ? TN * DGH : 0));
  S* dq_all = Cell::separate_recurrent_gradient ? dq_buffer.data() : dxp_all;

  // Per direction, for all rows: the sequences the loop reads.
  const auto D = static_cast<size_t>(s.D());
  std::vector<Direction<S>> dirs;
  std::vector<CellBackwardState<S>> states(D);
  std::vector<Buffer<S>> hp_all(D), hm_all(D);
  // R [G·H, H] packed once per call, per direction, for the steps' products dQ·R.
  std::vector<PackedPanels<S>> weights(D);
  for (int d = 0; d < s.D(); ++d) {
    dirs.push_back(detail::make_direction(s, reverse, d, a.recurrentWeight, a.peephole,
                                          a.secondaryBias, a.mask));
    pack_panels(dirs.back().recurrentWeight, H, 1, GH, 1, H, weights[static_cast<size_t>(d)]);
    dirs.back().weight_panels = &weights[static_cast<size_t>(d)];
    detail::prepare_direction(cell, s, a, dirs.back(), dxp_all, dq_all, states[d], hp_all[d], hm_all[d]);
  }

  const auto split = detail::split_work(s, cell.recurrent_gates(), sizeof(S));
  if (split.team > 1) {
    detail::backward_team(cell, s, a, dirs[0], states[0], split.team);
  } else {
    run_parts(static_cast<int>(split.parts.size()), split.parallel, [&](int i) {
      const auto& part = split.parts[static_cast<size_t>(i)];
      detail::backward_rows(cell, s, a, dirs[static_cast<size_t>(part.d)], part,
                            states[static_cast<size_t>(part.d)]);
    });
  }

  // Weight gradients after the loops, one GEMM each over all T·N rows.
  for (int d = 0; d < s.D(); ++d) {
    auto& state = states[static_cast<size_t>(d)];
    // dR = Σ_t dQ_tᵀ·hm_t.
    gemm(Trans::yes, Trans::no, RGH, H, TN, S(1), state.dq_all, DGH, state.views.hm.base, H, S(0),
         a.recurrentWeightGrad + d * GH * H, H);
    cell.finish_backward(dirs[static_cast<size_t>(d)], a, state);
  }
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
