// The time loops of one direction shared by a team of threads, step by step
// (SplitPath::team): for a batch too small to cut into row chunks.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "sequences.hpp"
#include "step_runner.hpp"

namespace rnngraph::detail {

// Thread p of `team` takes the units [p·units/team, (p+1)·units/team) of a split, in `step`s.
inline std::pair<Index, Index> team_share(int p, int team, Index units, Index step) {
  const Index blocks = (units + step - 1) / step;
  return {std::min(units, blocks * p / team * step),
          std::min(units, blocks * (p + 1) / team * step)};
}

// One direction shared by `team` threads, step by step: each thread computes its slice of
// the gate columns of the recurrent product (streaming only its slice of R, which stays in
// its cache), then its rows of the element-wise step; a barrier separates the phases.
template <class Cell, class S>
void forward_team(const Cell& cell, const RNNShape& s, const ForwardArgs<S>& a,
                  const Direction<S>& dir, const ForwardSequences<S>& seqs, int team) {
  const Index T = s.T, N = s.N, H = s.H, GH = s.GH(), DH = s.DH();
  std::vector<S> recurrent(static_cast<size_t>(N * GH));
  std::vector<S> masked(static_cast<size_t>(a.mask ? N * H : 0));
  SpinBarrier barrier(team);

  // Each thread's units of the product (Direction::times_units_t): whole panels of the
  // packed Rᵀ, or runs of 16 columns of R.
  const Index units = cell.recurrent_gates() * dir.units_per_gate();
  const Index unit_step = dir.weight_t_panels ? 1 : 16;

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
        dir.times_units_t(N, u0, u1, hm, ld_hm, recurrent.data() + dir.unit_column(u0), GH);
      }
      barrier.wait();
      // Phase 2: this thread's rows of the element-wise step (and of the next masked state).
      if (rows > 0) {
        ForwardStep<S> step = seqs.step(mine, k, t, r0);
        step.q = recurrent.data() + r0 * GH;
        step.hm = hm + r0 * ld_hm;
        step.ld_hm = ld_hm;
        step.scratch = step_scratch.data();
        run_forward_step(cell, mine, step);
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
  const Index T = s.T, N = s.N, H = s.H, DH = s.DH(), dH = dir.d * H;  // this direction's block
  const Index ld = state.ld_dxp;
  std::vector<S> carry(static_cast<size_t>(N * H)), dhm(static_cast<size_t>(N * H));
  std::vector<S> dhp(static_cast<size_t>(N * H));
  // dL/d(final state) enters at the last processed step (SPEC.md section 6).
  if (a.stateGradient) block(carry.data(), N, H, H) = cblock(a.stateGradient + dH, N, H, DH);
  SpinBarrier barrier(team);

  // Each thread's columns of dL/dhm: whole panels of the packed R.
  const Index unit_step = dir.weight_panels->width;

  run_parts(team, true, [&](int p) {
    const auto [col0, col1] = team_share(p, team, H, unit_step);
    const Index r0 = N * p / team, rows = N * (p + 1) / team - r0;
    const Direction<S> mine = dir.rows(r0, rows);
    const BackwardViews<S> views = state.views.rows(r0);
    std::vector<S> dh(static_cast<size_t>(rows * H)),
        step_scratch(static_cast<size_t>(2 * rows * H));
    for (Index k = T - 1; k >= 0; --k) {
      const Index t = dir.time(k);
      // Phase 1: this thread's rows of the element-wise step.
      if (rows > 0) {
        block(dh.data(), rows, H, H) =
            cblock(a.sourceGradient + (t * N + r0) * DH + dH, rows, H, DH) +
            cblock(carry.data() + r0 * H, rows, H, H);
        BackwardStep<S> step = state.step(t, r0);
        if constexpr (Cell::rebuilds_states_in_loop) state.set_next_state(step, mine, k, r0);
        step.dh = dh.data();
        step.dhm = dhm.data() + r0 * H;
        step.dhp = dhp.data() + r0 * H;
        step.scratch = step_scratch.data();
        run_backward_step(cell, mine, step, views);
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
  if (a.initStateGrad) block(a.initStateGrad + dH, N, H, DH) = block(carry.data(), N, H, H);
}

}  // namespace rnngraph::detail
