// The sequences of one direction: where its forward steps read and write, and the views
// its backward steps read, built before each time loop (for all batch rows).
#pragma once

#include "parallel.hpp"
#include "cell.hpp"
#include "workspace.hpp"

namespace rnngraph::detail {

// f(t) for every step t of a pass over whole sequences (before or after the time loops),
// the steps shared among the threads when the pass is large: the passes are independent
// per step, and a single thread would leave the others idle.
template <class F>
void for_each_step(Index T, Index elements_per_step, F&& f) {
  const Index blocks = parallel_blocks(T * elements_per_step, tuning::ParallelSite::pass, T);
  parallel_for(blocks, [&](Index b) {
    for (Index t = T * b / blocks; t < T * (b + 1) / blocks; ++t) f(t);
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

// Where one direction's forward steps read and write, for all of its batch rows.
template <class S>
struct ForwardSequences {
  Seq<S> h, c, gates;  // h_t, c_t (LSTM) and zState (or a scratch row when not training)
  Seq<S> product;      // GRU resetAfter's kept hm·R_oᵀ + b2, as h (base nullptr: not kept)
  const S* h0 = nullptr;
  Index h0_ld = 0;  // initial state and cell (zeros when absent)
  const S* c0 = nullptr;
  Index c0_ld = 0;
  const S* projected = nullptr;
  Index xp_step = 0, xp_ld = 0;  // x·Wᵀ (or x' − b)
  const S* bias = nullptr;       // this direction's b, added by the cell's step
  Buffer<S> zeros, gate_scratch;

  // Step k (time t) for the batch rows from row0 on; q, hm and scratch are the caller's.
  ForwardStep<S> step(const Direction<S>& dir, Index k, Index t, Index row0) const {
    ForwardStep<S> st;
    st.t = t;
    st.xp = projected + t * xp_step + row0 * xp_ld;
    st.ld_xp = xp_ld;
    st.bias = bias;
    if (k == 0) {
      st.hp = h0 + row0 * h0_ld;
      st.ld_hp = h0_ld;
      st.cp = c.base ? c0 + row0 * c0_ld : nullptr;
      st.ld_cp = c0_ld;
    } else {
      const Index p = dir.previous(t);
      st.hp = h.at(p) + row0 * h.ld;
      st.ld_hp = h.ld;
      st.cp = c.base ? c.at(p) + row0 * c.ld : nullptr;
      st.ld_cp = c.ld;
    }
    st.h = h.at(t) + row0 * h.ld;
    st.ld_h = h.ld;
    st.c = c.base ? c.at(t) + row0 * c.ld : nullptr;
    st.ld_c = c.ld;
    st.gates = gates.at(t) + row0 * gates.ld;
    st.ld_gates = gates.ld;
    st.product = product.base ? product.at(t) + row0 * h.ld : nullptr;  // (laid out as h)
    st.col1 = dir.H;
    return st;
  }
};

template <class Cell, class S>
ForwardSequences<S> forward_sequences(const RNNShape& s, const ForwardArgs<S>& a, int d,
                                      const S* projected) {
  const Index N = s.N, H = s.H, GH = s.GH(), DH = s.DH(), DGH = s.DGH();
  ForwardSequences<S> f;
  f.zeros = zeroed_buffer<S>(static_cast<size_t>(N * H));
  f.h = Seq<S>{a.output + d * H, N * DH, DH};
  f.c = Seq<S>{Cell::has_cell_state ? a.cellOutput + d * H : nullptr, N * DH, DH};
  f.product = Seq<S>{a.recurrentProduct ? a.recurrentProduct + d * H : nullptr, N * DH, DH};
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
  else if (a.mask)
    first = cblock(a.initState + dir.d * H, N, H, DH) * cblock(dir.mask_at(t0), N, H, DH);
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
  // GRU resetAfter: hm·R_oᵀ + b2 as the forward op kept it (base nullptr: the cell's
  // prepare_backward computes it)
  state.views.q_o =
      Seq<const S>{a.recurrentProduct ? a.recurrentProduct + d * H : nullptr, N * DH, DH};
  state.init_cell = a.initCell ? a.initCell + d * H : nullptr;
  state.cell_gradient = a.cellGradient ? a.cellGradient + d * H : nullptr;
  state.cell_sequence_gradient =
      Seq<const S>{a.cellSequenceGradient ? a.cellSequenceGradient + d * H : nullptr, N * DH, DH};
  state.init_cell_grad = a.initCellGrad ? a.initCellGrad + d * H : nullptr;
  if constexpr (Cell::rebuilds_states_in_loop) prepare_first_state(a, dir, state, hm_all);
  else prepare_states(cell, a, dir, state, hp_all, hm_all);
  state.dxp_all = dxp_all + d * GH;
  state.dq_all = dq_all + d * GH;
  state.ld_dxp = DGH;
  state.batch_stride = N;
  cell.prepare_backward(dir, state);
}

}  // namespace rnngraph::detail
