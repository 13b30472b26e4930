// The single-gate RNN's step math (SPEC.md sections 5 and 6); the driver does the rest.
#include "rnngraph/single_gate_rnn.hpp"

#include "driver/recurrence.hpp"
#include "vector_math.hpp"

namespace rnngraph {
namespace {

template <class S>
struct SingleGateRNNCell : CellDefaults<S, SingleGateRNNOptions::gates> {
  static constexpr const char* name = "singleGateRNN";
  // The gradient op gets no outputFwd: each backward step rebuilds h_t = act(zState_t).
  static constexpr bool rebuilds_states_in_loop = true;
  static constexpr bool column_steps = true;
  Activation activation;

  explicit SingleGateRNNCell(const SingleGateRNNOptions& o) : activation(o.activation) {}

  // z = x_t·Wᵀ + b + hm·Rᵀ (zState), h = act(z), for the units [col0, col1).
  void forward_step(const Direction<S>& dir, const ForwardStep<S>& st) const {
    simd::for_each_row_vector<S>(dir.N, st.col0, st.col1, [&](Index n, simd::RowVector<S> at) {
      auto z = at.load(st.xp + n * st.ld_xp);
      if (st.bias) z += at.load(st.bias);
      z += at.load(st.q + n * dir.H);
      at.store(st.gates + n * st.ld_gates, z);
      at.store(st.h + n * st.ld_h, simd::activate<S>(activation, z));
    });
  }

  // dL/dz = dh ⊙ act'(z), with act' written in terms of h = act(z).
  void backward_step(const Direction<S>& dir, const BackwardStep<S>& st,
                     const BackwardViews<S>& v) const {
    const Index N = dir.N, H = dir.H;
    auto h = block(st.scratch, N, H, H);
    h = cblock(v.gates.at(st.t), N, H, v.gates.ld);
    activate(activation, h);
    if (st.next_state) {
      auto next = block(st.next_state, N, H, st.ld_next_state);
      if (st.next_mask) next = h * cblock(st.next_mask, N, H, dir.state_ld);
      else next = h;
    }
    auto dz = block(st.dxp, N, H, st.ld_dxp);
    dz = cblock(st.dh, N, H, H);
    multiply_by_derivative(activation, cblock(st.scratch, N, H, H), dz);
  }
};

}  // namespace

RNNGRAPH_CELL_ENTRY_POINTS(single_gate_rnn, SingleGateRNNOptions, SingleGateRNNCell)

}  // namespace rnngraph
