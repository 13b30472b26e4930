// The time loops of one direction shared by a team of threads, step by step
// (SplitPath::team): for a batch too small to cut into row chunks. Each step is two phases
// of a parallel_phases job (parallel.hpp): the items of one phase are claimed dynamically,
// so a thread the OS deschedules holds back no step; on an idle machine each thread keeps
// the same share of every step (and of R, which stays in its cache).
#pragma once

#include <algorithm>

#include "sequences.hpp"
#include "step_runner.hpp"
#include "work_split.hpp"
#include "workspace.hpp"

namespace rnngraph::detail {

// Per-thread scratch of a team: `per_slot` elements for each of `team` slots.
template <class S>
struct SlotScratch {
  SlotScratch(int team, Index per_slot)
      : per_slot_(per_slot), data_(zeroed_buffer<S>(static_cast<size_t>(team * per_slot))) {}
  S* at(int slot) { return data_.data() + slot * per_slot_; }

 private:
  Index per_slot_;
  Buffer<S> data_;
};

// The items of a step's product Q = hm·Rᵀ over `units` units: the same number of runs of
// units for every slot, as equal as whole units allow, so every slot's share of a step is the
// same work; runs of about kTeamRunPanels panels of the packed Rᵀ (or kTeamRunColumns columns
// of an unpacked R), and at least kTeamItemsPerSlot per slot (tuning.hpp).
template <class S>
Index team_product_items(const Direction<S>& dir, Index units, int team) {
  const Index run_units = dir.weight_t_panels ? tuning::kTeamRunPanels : tuning::kTeamRunColumns;
  const Index per_run = Index(team) * run_units;
  const Index per_slot = std::max(tuning::kTeamItemsPerSlot, (units + per_run / 2) / per_run);
  return std::max<Index>(1, std::min<Index>(units, Index(team) * per_slot));
}

// Rows [r0, r0 + rows), columns [j0, j1) of step k's masked previous state hm = (the state
// before step k) ⊙ (step k's mask), into out [N, H].
template <class S>
void mask_previous(const Direction<S>& dir, const ForwardSequences<S>& seqs, Index k, S* out,
                   Index r0, Index rows, Index j0, Index j1) {
  const ForwardStep<S> st = seqs.step(dir, k, dir.time(k), r0);
  const Index H = dir.H, cols = j1 - j0, ld = dir.state_ld;
  block(out + r0 * H + j0, rows, cols, H) =
      cblock(st.hp + j0, rows, cols, st.ld_hp) *
      cblock(dir.mask_at(st.t) + r0 * ld + j0, rows, cols, ld);
}

// Whether a team runs each step of this call as one phase of items of hidden units
// (forward_team_by_units): a cell whose step reads only each unit's own columns and no
// dependent product, with up to kTeamUnitStepsMaxRows rows, or kSingleStepUnitRows for a
// call of one step (or as forced: StepsPath).
template <class Cell>
bool steps_by_units(const Cell& cell, const RNNShape& s) {
  if constexpr (Cell::column_steps) {
    if (cell.uses_dependent_product()) return false;
    const StepsPath forced = forced_paths().steps;
    if (forced != StepsPath::automatic) return forced == StepsPath::units;
    const Index max_rows = s.T == 1 ? tuning::kSingleStepUnitRows : tuning::kTeamUnitStepsMaxRows;
    return s.N <= max_rows;
  }
  return false;
}

// How a team runs a call's forward steps, decided once per call (a forced path read twice
// could change in between): by units or in two phases (steps_by_units), and the input
// projection x·Wᵀ of every step when it is left to the first step's items, as it may be when
// the team runs steps by units: each item computes the projection's columns of its own units
// (panels of the packed Wᵀ, one block per gate, as wide as Rᵀ's), so the call is one job, not
// two (weights nullptr: the caller projects first).
template <class S>
struct TeamSteps {
  bool by_units = false;
  const PackedPanels<S>* weights = nullptr;  // Wᵀ [I, G·H] packed (one direction)
  const S* source = nullptr;                 // x [T·N, I]
  Index rows = 0, I = 0;
  S* out = nullptr;  // x·Wᵀ [T·N, G·H] with leading dimension ld
  Index ld = 0;
};

// A team's steps for this call (only read when split.path is team). The projection goes into
// the steps for a team by units over panels of the packed Rᵀ, the packed Wᵀ's panels as wide,
// and at most kStepProjectionRows rows of x, or a call of one step (tuning.hpp). `out`: where
// x·Wᵀ goes.
template <class Cell, class S>
TeamSteps<S> team_steps(const Cell& cell, const RNNShape& s, const ForwardArgs<S>& a,
                        const WorkSplit& split, const Direction<S>& dir, S* out) {
  const bool by_units = split.path == SplitPath::team && steps_by_units(cell, s);
  const Index rows = s.T * s.N;
  const bool few_rows = rows <= tuning::kStepProjectionRows || s.T == 1;
  const bool in_steps = by_units && s.has_input_weight && a.packed && few_rows && s.D() == 1 &&
                        dir.weight_t_panels &&
                        dir.weight_t_panels->width == a.packed->input_t.width;
  return {by_units, in_steps ? &a.packed->input_t : nullptr, a.source, rows, s.I, out, s.DGH()};
}

// One direction shared by `team` threads, for a cell whose forward step can compute any
// range of hidden units (Cell::column_steps): phase 0 masks the initial state, then step k is
// one phase, phase k + 1. Its items are runs of hidden units; an item computes the columns of
// Q = hm·Rᵀ of its units in every gate, then the element-wise step of those units for every
// batch row (and their masked state for step k + 1). Against two phases per step (below) a
// step waits once, not twice, and its element-wise math is shared, not left to one thread
// when N = 1. Used up to kTeamUnitStepsMaxRows rows, or kSingleStepUnitRows for a call of
// one step (tuning.hpp; or as forced, StepsPath): with more rows it was slower on row 5 while
// each gate's run of panels was a product of its own, and with the runs of every gate swept as
// one sequence (packed_gemm_units) it is no faster in one direction (results/
// machine16-steps-ab-2026-11-29.txt). The masked state alternates between two buffers: an item
// writes step k + 1's while others still read step k's.
template <class Cell, class S>
void forward_team_by_units(const Cell& cell, const RNNShape& s, const ForwardArgs<S>& a,
                           const Direction<S>& dir, const ForwardSequences<S>& seqs, int team,
                           const TeamSteps<S>& steps) {
  const Index T = s.T, N = s.N, H = s.H, GH = s.GH();
  const int gates = cell.recurrent_gates();
  auto recurrent = zeroed_buffer<S>(static_cast<size_t>(N * GH));
  auto masked = zeroed_buffer<S>(static_cast<size_t>(a.mask ? 2 * N * H : 0));
  const Index per_gate = dir.units_per_gate();  // units of one gate; unit p is column p·width
  const Index unit_items = team_product_items(dir, per_gate, team);
  auto masked_at = [&](Index k) { return masked.data() + (k % 2) * N * H; };

  auto items = [&](Index phase) -> Index {
    if (phase == 0) return a.mask ? N : 0;
    return unit_items;
  };
  auto run = [&](Index phase, Index first, Index last, int) {
    if (phase == 0) return mask_previous(dir, seqs, 0, masked_at(0), first, last - first, 0, H);
    const Index k = phase - 1, t = dir.time(k);
    ForwardStep<S> step = seqs.step(dir, k, t, 0);
    step.hm = a.mask ? masked_at(k) : step.hp;
    step.ld_hm = a.mask ? H : step.ld_hp;
    step.q = recurrent.data();
    const Index p0 = per_gate * first / unit_items, p1 = per_gate * last / unit_items;
    if (steps.weights && k == 0) {  // these units' columns of x·Wᵀ, every step, gate
      const TeamSteps<S>& p = steps;
      packed_gemm_units(p.rows, 0, p.I, p.source, p.I, *p.weights, p.weights->groups, p0, p1, S(0),
                        p.out, p.ld);
    }
    // These units' columns of Q in every gate, in one sweep whose register tiles may span two
    // gates; on every other step from the last gate's last panel back (step_direction; the
    // items are claimed from the back then too).
    step_direction(cell, dir, k)
        .times_gate_units_t(N, gates, p0, p1, step.hm, step.ld_hm, recurrent.data(), GH);
    step.col0 = dir.unit_column(p0);
    step.col1 = p1 == per_gate ? H : dir.unit_column(p1);
    cell.forward_step(dir, step);
    if (a.mask && k + 1 < T) {
      mask_previous(dir, seqs, k + 1, masked_at(k + 1), 0, N, step.col0, step.col1);
    }
  };
  parallel_phases(team, 1 + T, items, run, [&](Index phase) {
    return phase >= 1 && step_sweeps_from_back(cell, dir, phase - 1);
  });
}

// One direction shared by `team` threads. Phase 0 masks the initial state; then step k is
// phase 2k + 1, the gate columns of Q = hm·Rᵀ in runs of units (Direction::times_units_t:
// panels of the packed Rᵀ, or columns of R; team_product_items), and phase 2k + 2, the
// element-wise step of the batch rows (and their masked state for step k + 1).
template <class Cell, class S>
void forward_team(const Cell& cell, const RNNShape& s, const ForwardArgs<S>& a,
                  const Direction<S>& dir, const ForwardSequences<S>& seqs, int team,
                  const TeamSteps<S>& steps) {
  if (steps.by_units) return forward_team_by_units(cell, s, a, dir, seqs, team, steps);
  const Index T = s.T, N = s.N, H = s.H, GH = s.GH();
  auto recurrent = zeroed_buffer<S>(static_cast<size_t>(N * GH));
  auto masked = zeroed_buffer<S>(static_cast<size_t>(a.mask ? N * H : 0));
  SlotScratch<S> scratch(team, 2 * N * H);

  const Index units = cell.recurrent_gates() * dir.units_per_gate();
  const Index unit_items = team_product_items(dir, units, team);

  // The previous state as a step reads it: masked (a buffer), or the state itself.
  auto previous = [&](const ForwardStep<S>& all) {
    return a.mask ? std::pair<const S*, Index>(masked.data(), H)
                  : std::pair<const S*, Index>(all.hp, all.ld_hp);
  };
  // The masked previous state of step k for the rows [r0, r0 + rows).
  auto mask_rows = [&](Index k, Index r0, Index rows) {
    mask_previous(dir, seqs, k, masked.data(), r0, rows, 0, H);
  };
  auto items = [&](Index phase) -> Index {
    if (phase == 0) return a.mask ? N : 0;
    return phase % 2 == 1 ? unit_items : N;
  };
  auto run = [&](Index phase, Index first, Index last, int slot) {
    if (phase == 0) return mask_rows(0, first, last - first);
    const Index k = (phase - 1) / 2, t = dir.time(k);
    const ForwardStep<S> all = seqs.step(dir, k, t, 0);
    const auto [hm, ld_hm] = previous(all);
    if (phase % 2 == 1) {  // these units' gate columns of Q (step_direction)
      const Index u0 = units * first / unit_items, u1 = units * last / unit_items;
      step_direction(cell, dir, k)
          .times_units_t(N, u0, u1, hm, ld_hm, recurrent.data() + dir.unit_column(u0), GH);
      return;
    }
    const Index r0 = first, rows = last - first;  // these rows' element-wise step
    const Direction<S> mine = dir.rows(r0, rows);
    ForwardStep<S> step = seqs.step(mine, k, t, r0);
    step.q = recurrent.data() + r0 * GH;
    step.hm = hm + r0 * ld_hm;
    step.ld_hm = ld_hm;
    step.scratch = scratch.at(slot);
    run_forward_step(cell, mine, step);
    if (a.mask && k + 1 < T) mask_rows(k + 1, r0, rows);
  };
  parallel_phases(team, 1 + 2 * T, items, run, [&](Index phase) {
    return phase % 2 == 1 && step_sweeps_from_back(cell, dir, (phase - 1) / 2);
  });
}

// The backward loop of one direction shared by `team` threads: step k is phase 2j (j-th
// processed, k = T - 1 - j), the element-wise step of the batch rows, and phase 2j + 1,
// the columns of dL/dhm = dQ·R in whole panels of the packed R, then of the carried
// gradient.
template <class Cell, class S>
void backward_team(const Cell& cell, const RNNShape& s, const GradientArgs<S>& a,
                   const Direction<S>& dir, const CellBackwardState<S>& state, int team) {
  const Index T = s.T, N = s.N, H = s.H, DH = s.DH(), dH = dir.d * H;  // this direction's block
  const Index ld = state.ld_dxp;
  auto carry = zeroed_buffer<S>(static_cast<size_t>(N * H));
  auto dhm = zeroed_buffer<S>(static_cast<size_t>(N * H));
  auto dhp = zeroed_buffer<S>(static_cast<size_t>(N * H));
  // dL/d(final state) enters at the last processed step (SPEC.md section 6).
  if (a.stateGradient) block(carry.data(), N, H, H) = cblock(a.stateGradient + dH, N, H, DH);
  SlotScratch<S> dh(team, N * H), scratch(team, 2 * N * H);
  const Index width = dir.weight_panels->width, panels = (H + width - 1) / width;

  auto items = [&](Index phase) -> Index { return phase % 2 == 0 ? N : panels; };
  auto run = [&](Index phase, Index first, Index last, int slot) {
    const Index k = T - 1 - phase / 2, t = dir.time(k);
    if (phase % 2 == 0) {  // these rows' element-wise step
      const Index r0 = first, rows = last - first;
      const Direction<S> mine = dir.rows(r0, rows);
      block(dh.at(slot), rows, H, H) =
          cblock(a.sourceGradient + (t * N + r0) * DH + dH, rows, H, DH) +
          cblock(carry.data() + r0 * H, rows, H, H);
      BackwardStep<S> step = state.step(t, r0);
      if constexpr (Cell::rebuilds_states_in_loop) state.set_next_state(step, mine, k, r0);
      step.dh = dh.at(slot);
      step.dhm = dhm.data() + r0 * H;
      step.dhp = dhp.data() + r0 * H;
      step.scratch = scratch.at(slot);
      run_backward_step(cell, mine, step, state.views.rows(r0));
      return;
    }
    // these panels' columns of dL/dhm += dQ_t·R, then of the carried gradient
    // (step_direction: the j-th processed step, j = phase / 2)
    const Index col0 = first * width, col1 = std::min(H, last * width);
    gradient_to_previous(cell, step_direction(cell, dir, phase / 2), N, state.dq_all + t * N * ld,
                         ld, dhm.data(), dhp.data(), a.mask ? dir.mask_at(t) : nullptr, DH,
                         carry.data(), col0, col1);
  };
  parallel_phases(team, 2 * T, items, run, [&](Index phase) {
    return phase % 2 == 1 && step_sweeps_from_back(cell, dir, phase / 2);
  });
  if (a.initStateGrad) block(a.initStateGrad + dH, N, H, DH) = block(carry.data(), N, H, H);
}

}  // namespace rnngraph::detail
