// The time loops of one direction over its own chunk of batch rows (SplitPath::serial and
// ::rows): each chunk runs every step with no synchronisation.
#pragma once

#include "sequences.hpp"
#include "step_runner.hpp"
#include "work_split.hpp"
#include "workspace.hpp"

namespace rnngraph::detail {

// The forward time loop of one direction over its chunk of batch rows.
template <class Cell, class S>
void forward_rows(const Cell& cell, const RNNShape& s, const ForwardArgs<S>& a,
                  const Direction<S>& whole, const Part& part, const ForwardSequences<S>& seqs) {
  const Index T = s.T, H = s.H, GH = s.GH(), DH = s.DH();
  const Index N = part.rows, r0 = part.row0;
  const Direction<S> dir = whole.rows(r0, N);

  // This chunk's workspace, allocated once before its time loop.
  auto recurrent = zeroed_buffer<S>(static_cast<size_t>(N * GH));
  auto masked = zeroed_buffer<S>(static_cast<size_t>(a.mask ? N * H : 0));
  auto step_scratch = zeroed_buffer<S>(static_cast<size_t>(2 * N * H));

  for (Index k = 0; k < T; ++k) {
    const Index t = dir.time(k);
    ForwardStep<S> step = seqs.step(dir, k, t, r0);
    step.q = recurrent.data();
    step.scratch = step_scratch.data();
    // SPEC.md section 5: the mask scales the previous state inside recurrent products only.
    if (a.mask) {
      block(masked.data(), N, H, H) =
          cblock(step.hp, N, H, step.ld_hp) * cblock(dir.mask_at(t), N, H, DH);
      step.hm = masked.data();
      step.ld_hm = H;
    } else {
      step.hm = step.hp;
      step.ld_hm = step.ld_hp;
    }
    // One GEMM per step over every recurrent gate: Q = hm·Rᵀ, [N, H] x [H, G·H], sweeping
    // Rᵀ's panels from either end in turn (step_direction).
    const Direction<S> swept = step_direction(cell, dir, k);
    swept.times_weight_t(N, 0, cell.recurrent_gates(), step.hm, step.ld_hm, step.q, GH);
    run_forward_step(cell, swept, step);
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
  auto dh = zeroed_buffer<S>(static_cast<size_t>(N * H));
  auto dh_next = zeroed_buffer<S>(static_cast<size_t>(N * H));
  auto dhm = zeroed_buffer<S>(static_cast<size_t>(N * H));
  auto dhp = zeroed_buffer<S>(static_cast<size_t>(N * H));
  auto step_scratch = zeroed_buffer<S>(static_cast<size_t>(2 * N * H));

  // dL/d(final state) enters at the last processed step (SPEC.md section 6); without it the
  // carry starts at the buffer's zeros.
  auto carry = block(dh_next.data(), N, H, H);
  if (a.stateGradient) carry = cblock(a.stateGradient + r0 * DH + d * H, N, H, DH);

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
    const Direction<S> swept = step_direction(cell, dir, k);  // (R's panels either way)
    run_backward_step(cell, swept, step, views);
    gradient_to_previous(cell, swept, N, step.dq, state.ld_dxp, dhm.data(), dhp.data(),
                         a.mask ? dir.mask_at(t) : nullptr, DH, dh_next.data(), 0, H);
  }
  if (a.initStateGrad) block(a.initStateGrad + r0 * DH + d * H, N, H, DH) = carry;
}

}  // namespace rnngraph::detail
