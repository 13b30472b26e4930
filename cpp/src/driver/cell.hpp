// What a cell is to the recurrence driver (README.md, "How the kernels are built"). The
// driver owns the time loops, the products with W and R, both directions and every buffer;
// a cell owns its element-wise gate math (SPEC.md section 5) and its derivative (section 6).
//
// A cell derives from CellDefaults<S, G> and writes only:
//   static constexpr const char* name;  // the forward op's name, for errors
//   explicit Cell(const Options&);      // its descriptor options (rnngraph/problem.hpp)
//   void forward_step(const Direction<S>&, const ForwardStep<S>&) const;
//   void backward_step(const Direction<S>&, const BackwardStep<S>&, const BackwardViews<S>&) const;
// The driver computes each step's product Q = hm·R_gᵀ over the cell's recurrent gates before
// forward_step, and dL/dhm = dQ·R after backward_step. Everything else is a default below,
// which a cell overrides where its math differs. The step functions see a chunk of batch rows
// (Direction::N rows); the other hooks see them all.
#pragma once

#include "steps.hpp"

namespace rnngraph {

// The forward output a gradient op needs besides zState (SPEC.md section 6).
enum class SavedSequence { none, outputFwd, cellOutputFwd };

template <class S, int G>
struct CellDefaults {
  // G: gate blocks in zState, R, W and b (SPEC.md section 3).
  static constexpr int gates = G;

  // What the gradient op requires of the forward op's outputs besides zState: nothing
  // (the single-gate RNN rebuilds h from zState), outputFwd or cellOutputFwd.
  static constexpr SavedSequence saved = SavedSequence::none;

  // The cell carries a second sequence, c (LSTM): the driver gives each forward step the
  // previous and the new cell (ForwardStep::cp, ::c), stored in the op's cellOutput.
  static constexpr bool has_cell_state = false;

  // dL/dQ differs from dL/dx' for some gate (GRU: its reset gate scales Q_o, and the
  // reset-before candidate's product is the dependent one): the driver keeps a separate
  // [T, N, G·H] buffer for dQ, which the backward step fills (BackwardStep::dq).
  static constexpr bool separate_recurrent_gradient = false;

  // The backward steps rebuild h_t themselves (from zState, and c_t for the LSTM) and write
  // it, masked, as the previous state of the step after it (BackwardStep::next_state), so no
  // pass over the sequence precedes the loop. Otherwise the driver builds hp and hm for every
  // step from state_sequence() before the loop.
  static constexpr bool rebuilds_states_in_loop = false;

  // dL/dh_{t-1} has terms besides dQ·R (GRU: z ⊙ dh, and the reset-before product's share):
  // the backward step writes them, in full, to BackwardStep::dhm (masked with the product)
  // and ::dhp (bypassing the mask).
  static constexpr bool direct_state_gradient = false;

  // Each step needs a second product, of a term that this step's gates make (the
  // reset-before GRU: (hm ⊙ r)·R_oᵀ). The cell then splits its steps in two halves, and the
  // driver computes the product between them (step_runner.hpp):
  //   DependentProduct<S> forward_before_product(dir, ForwardStep) const;   // C = A·R_gateᵀ
  //   void forward_after_product(dir, ForwardStep) const;
  //   DependentProduct<S> backward_before_product(dir, BackwardStep, BackwardViews) const;  // C = A·R_gate
  //   void backward_after_product(dir, BackwardStep, BackwardViews) const;
  // uses_dependent_product() says whether this call's options need it.
  static constexpr bool has_dependent_product = false;
  bool uses_dependent_product() const { return false; }

  // forward_step computes only the hidden units [col0, col1) of its ForwardStep, reading
  // and writing nothing else: each unit's math reads only its own columns of every gate. A
  // team then gives each thread the units whose product columns it computed, and a step is
  // one phase, not two (team_loops.hpp). (Unless the call uses a dependent product.)
  static constexpr bool column_steps = false;

  // The leading gates whose product hm·R_gᵀ the driver computes before each forward step.
  int recurrent_gates() const { return G; }

  // h_t of every step, read by the backward (without rebuilds_states_in_loop): the forward
  // op's output sequence, outputFwd.
  Seq<const S> state_sequence(const Direction<S>&, CellBackwardState<S>& st) const {
    return st.output_fwd;
  }

  // The forward op can keep a product of every step for its gradient op (the internal
  // recurrentProduct of ForwardArgs and GradientArgs): the GRU with resetAfter only.
  bool keeps_product() const { return false; }

  // Work over whole sequences before the backward loop (views and carries the steps read)
  // and after it (gradients summed over every step); all batch rows of one direction.
  void prepare_backward(const Direction<S>&, CellBackwardState<S>&) const {}
  void finish_backward(const Direction<S>&, const GradientArgs<S>&, CellBackwardState<S>&) const {}
};

}  // namespace rnngraph
