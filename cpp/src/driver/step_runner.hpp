// One step of a cell inside the time loops: the cell's element-wise math, with the dependent
// product between its halves when it has one (cell.hpp), and the gradient carried to the
// previous step.
#pragma once

#include "cell.hpp"
#include "rnngraph/forced_paths.hpp"

namespace rnngraph::detail {

// Whether the products of the k-th processed step of `cell`'s time loop sweep R's packed
// panels from the back: every other step, so that a step starts on the panels the step
// before read last, which a thread whose share of R is larger than its L2 then finds there
// instead of in L3 (docs/runtime.md); a team's slots claim that step's product items from
// the back of their shares too (team_loops.hpp). Counted over the calls with the same packed
// weights (Direction::steps_before), so that a call of one step (a decoder's) starts where
// the call before ended: 16-core Xeon, row 2 (one GRU step, 3 MB of R and of W) at 2 threads
// 0.175 -> 0.119 ms, faster in each of 4 alternating rounds; the other cells of rows 2-5 at
// 1-16 threads within the rounds' spread, and on the 2-core Zen 4 all but row 5 on one
// thread, faster in every round (16.9-18.3 against 18.6-21.2 ms)
// (results/machine16-call-parity-ab-2026-11-29.txt). Never for a step with a dependent product
// (a reset-before GRU): its second product reads R's last gate after the first has read the
// others, so no order of the panels lets one step start where the last ended, and
// alternating measured slower: row 15 on one thread of the 2-core AMD EPYC (Zen 4), 5
// alternating rounds, ascending 109-120 ms against 115-163
// (results/sweep-ab-2cores-2026-11-28.txt). _force_paths(sweep="ascending"): never.
template <class Cell, class S>
bool step_sweeps_from_back(const Cell& cell, const Direction<S>& dir, Index k) {
  return (dir.steps_before + k) % 2 == 1 && !cell.uses_dependent_product() &&
         forced_paths().sweep != SweepPath::ascending;
}

// The direction whose products the k-th processed step of `cell`'s time loop runs: `dir`,
// sweeping from the back when step_sweeps_from_back says so.
template <class Cell, class S>
Direction<S> step_direction(const Cell& cell, const Direction<S>& dir, Index k) {
  Direction<S> out = dir;
  out.descending = step_sweeps_from_back(cell, dir, k);
  return out;
}

template <class Cell, class S>
void run_forward_step(const Cell& cell, const Direction<S>& dir, const ForwardStep<S>& st) {
  if constexpr (Cell::has_dependent_product) {
    if (cell.uses_dependent_product()) {
      const DependentProduct<S> p = cell.forward_before_product(dir, st);
      dir.times_weight_t(dir.N, p.gate, 1, p.a, p.lda, p.c, p.ldc);
      cell.forward_after_product(dir, st);
      return;
    }
  }
  cell.forward_step(dir, st);
}

template <class Cell, class S>
void run_backward_step(const Cell& cell, const Direction<S>& dir, const BackwardStep<S>& st,
                       const BackwardViews<S>& views) {
  if constexpr (Cell::has_dependent_product) {
    if (cell.uses_dependent_product()) {
      const DependentProduct<S> p = cell.backward_before_product(dir, st, views);
      dir.times_weight(dir.N, p.gate, 1, p.a, p.lda, S(0), p.c, p.ldc);
      cell.backward_after_product(dir, st, views);
      return;
    }
  }
  cell.backward_step(dir, st, views);
}

// The gradient carried to the previous step: dL/dhp = dL/dhm ⊙ m + (the paths that bypass
// the mask), for a [rows, cols] block of dhm, dhp and carry (leading dimension ld).
template <class S>
void carry_to_previous(Index rows, Index cols, Index ld, const S* dhm, const S* dhp, const S* mask,
                       Index mask_ld, S* carry) {
  auto out = block(carry, rows, cols, ld);
  if (mask) {
    out = cblock(dhm, rows, cols, ld) * cblock(mask, rows, cols, mask_ld) +
          cblock(dhp, rows, cols, ld);
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

}  // namespace rnngraph::detail
