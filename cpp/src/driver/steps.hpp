// What the recurrence driver hands a cell besides its Direction: one forward or backward
// step, the sequences a backward step reads, and the products a cell asks the driver for.
#pragma once

#include <vector>

#include "arrays.hpp"
#include "workspace.hpp"
#include "direction.hpp"

namespace rnngraph {

// One forward step: every block is [N, ·] with its own leading dimension.
template <class S>
struct ForwardStep {
  Index t = 0;
  const S* xp = nullptr;
  Index ld_xp = 0;          // x_t·Wᵀ, [N, G·H] (the bias is not in it yet)
  const S* bias = nullptr;  // b [G·H] of this direction, or nullptr: x'_t = xp + b
  S* q = nullptr;           // hm·R_gᵀ for the recurrent gates, [N, G·H], ld G·H (cell may reuse)
  const S* hp = nullptr;
  Index ld_hp = 0;  // previous state
  const S* hm = nullptr;
  Index ld_hm = 0;  // previous state times mask
  const S* cp = nullptr;
  Index ld_cp = 0;  // previous cell (LSTM)
  S* h = nullptr;
  Index ld_h = 0;  // new state
  S* c = nullptr;
  Index ld_c = 0;  // new cell (LSTM)
  S* gates = nullptr;
  Index ld_gates = 0;    // this step's zState row
  S* product = nullptr;  // GRU resetAfter: hm·R_oᵀ + b2 kept here (laid out as h), or nullptr
  S* scratch = nullptr;  // [N, 2H] contiguous
  // The hidden units [col0, col1) this step computes: all of them (0, H), unless a team cuts
  // the step by units (Cell::column_steps, team_loops.hpp).
  Index col0 = 0, col1 = 0;
};

// A product that a cell's step needs in its middle (Cell::has_dependent_product): the driver
// computes C = A·R_gateᵀ (forward) or C = A·R_gate (backward), [N, H], between the two halves.
template <class S>
struct DependentProduct {
  Index gate = 0;
  const S* a = nullptr;
  Index lda = 0;
  S* c = nullptr;
  Index ldc = 0;
};

// One backward step. The cell must write dxp, dq (when separate), and, when it has direct
// state gradients (Cell::direct_state_gradient), dhm and dhp in full.
template <class S>
struct BackwardStep {
  Index t = 0;
  S* dh = nullptr;   // dL/dh_t, [N, H] contiguous (may be clobbered)
  S* dxp = nullptr;  // out: dL/dx'_t, [N, G·H] with leading dimension ld_dxp
  S* dq = nullptr;   // out: dL/dQ_t where Q = (recurrent input)·Rᵀ (== dxp if not separate)
  Index ld_dxp = 0;
  S* dhm = nullptr;      // out: dL/dhm_t beyond dq·R over the recurrent gates, [N, H]
  S* dhp = nullptr;      // out: dL/dhp_t through paths that bypass the mask, [N, H]
  S* scratch = nullptr;  // [N, 2H]
  // For a cell that rebuilds h in its backward steps (Cell::rebuilds_states_in_loop): where
  // h_t goes, times next_mask when there is one, as hm of the next step in processing order
  // (rows ld_next_state apart, next_mask's D·H apart); nullptr at the last step.
  S* next_state = nullptr;
  Index ld_next_state = 0;
  const S* next_mask = nullptr;
};

// The sequences a backward step reads, as views of one direction's buffers. rows(r0) gives
// the same views for a chunk of batch rows starting at r0.
template <class S>
struct BackwardViews {
  Seq<const S> gates;   // zState of this direction
  Seq<const S> hp;      // previous state for each t
  Seq<const S> hm;      // previous state times mask
  Seq<const S> states;  // h_t
  Seq<const S> cell;    // LSTM: c_t (cellOutputFwd)
  const S* cell_init = nullptr;
  Index cell_init_ld = 0;  // LSTM: the cell before the first step
  Seq<const S> q_o;        // GRU resetAfter: hm·R_oᵀ + b2
  Seq<const S> cell_grad;  // LSTM: dL/dc_t given for every step (base nullptr when absent)
  S* carry = nullptr;      // LSTM: dL/dc carried to the previous step, [N, H] contiguous
  Index H = 0;

  BackwardViews rows(Index row0) const {
    BackwardViews out = *this;
    for (Seq<const S>* v :
         {&out.gates, &out.hp, &out.hm, &out.states, &out.cell, &out.q_o, &out.cell_grad}) {
      if (v->base) v->base += row0 * v->ld;
    }
    if (cell_init) out.cell_init = cell_init + row0 * cell_init_ld;
    if (carry) out.carry = carry + row0 * H;
    return out;
  }
  // LSTM: c before step t (the previous step's cell, or cell_init at the first step).
  const S* previous_cell(const Direction<S>& dir, Index t, Index& ld) const {
    if (dir.is_first(t)) {
      ld = cell_init_ld;
      return cell_init;
    }
    ld = cell.ld;
    return cell.at(dir.previous(t));
  }
};

// One direction's backward state: buffers built before the time loop (all batch rows), the
// views the steps read, and this direction's slices of the shared tensors.
template <class S>
struct CellBackwardState {
  BackwardViews<S> views;
  Buffer<S> buffer_a, buffer_b, buffer_c;  // cell-owned: sequences [T, N, H], or [N, H] rows
  Buffer<S> carry;                         // cell-owned, [N, H]
  Seq<const S> cell_fwd;                   // LSTM cellOutputFwd slice
  Seq<const S> output_fwd;                 // GRU outputFwd slice
  const S* init_cell = nullptr;            // ld D·H
  const S* cell_gradient = nullptr;        // ld D·H
  Seq<const S> cell_sequence_gradient;     // LSTM cellSequenceGradient slice, or base nullptr
  S* init_cell_grad = nullptr;             // ld D·H
  S* dxp_all = nullptr;  // [T·N, G·H] block of this direction, leading dimension ld_dxp
  S* dq_all = nullptr;
  Index ld_dxp = 0;
  Index batch_stride = 0;  // rows per timestep (the op's whole N)
  Seq<S> hm_out;           // hm, writable: filled by the loop when the cell rebuilds states

  // Step t for the batch rows from row0 on: its dL/dx' and dL/dQ rows. dh, dhm, dhp and
  // scratch are the caller's.
  BackwardStep<S> step(Index t, Index row0) const {
    BackwardStep<S> st;
    st.t = t;
    st.dxp = dxp_all + (t * batch_stride + row0) * ld_dxp;
    st.dq = dq_all + (t * batch_stride + row0) * ld_dxp;
    st.ld_dxp = ld_dxp;
    return st;
  }
  // Processed step k of `dir` (a chunk of rows from row0 on): where h goes for the next step.
  void set_next_state(BackwardStep<S>& st, const Direction<S>& dir, Index k, Index row0) const {
    if (k + 1 >= dir.T) return;
    const Index next = dir.time(k + 1);
    st.next_state = hm_out.at(next) + row0 * hm_out.ld;
    st.ld_next_state = hm_out.ld;
    st.next_mask = dir.mask ? dir.mask_at(next) : nullptr;
  }
};

}  // namespace rnngraph
