#include "rnngraph/single_gate_rnn.hpp"

#include "rnngraph/recurrence.hpp"
#include "vector_math.hpp"

namespace rnngraph {
namespace {

template <class S>
struct SingleGateCell {
  static constexpr const char* name = "singleGateRNN";
  static constexpr bool has_cell_state = false;
  static constexpr bool separate_recurrent_gradient = false;
  static constexpr bool rebuilds_states_in_loop = false;
  static constexpr bool direct_state_gradient = false;
  Activation activation;

  int recurrent_gates() const { return 1; }

  void forward_step(const Direction<S>& dir, const ForwardStep<S>& st) const {
    const Index N = dir.N, H = dir.H;
    auto z = block(st.gates, N, H, st.ld_gates);
    z = cblock(st.xp, N, H, st.ld_xp);  // x' = x_t·Wᵀ + b, then + hm·Rᵀ
    if (st.bias) z.rowwise() += Eigen::Map<const Eigen::Array<S, 1, Eigen::Dynamic>>(st.bias, H);
    z += cblock(st.q, N, H, H);
    auto h = block(st.h, N, H, st.ld_h);
    h = z;
    activate(activation, h);
  }

  // The gradient op gets no outputFwd: h[t] = act(zState[t]) is recomputed once.
  Seq<const S> state_sequence(const Direction<S>& dir, CellBackwardState<S>& st) const {
    const Index T = dir.T, N = dir.N, H = dir.H;
    const auto& gates = st.views.gates;
    st.buffer_a.resize(static_cast<size_t>(T * N * H));
    detail::for_each_step(T, N * H, [&](Index t) {
      auto h = block(st.buffer_a.data() + t * N * H, N, H, H);
      h = cblock(gates.at(t), N, H, gates.ld);
      activate(activation, h);
    });
    return Seq<const S>{st.buffer_a.data(), N * H, H};
  }

  void prepare_backward(const Direction<S>&, CellBackwardState<S>&) const {}

  void backward_step(const Direction<S>& dir, const BackwardStep<S>& st,
                     const BackwardViews<S>& v) const {
    const Index N = dir.N, H = dir.H;
    auto dz = block(st.dxp, N, H, st.ld_dxp);
    dz = cblock(st.dh, N, H, H);
    multiply_by_derivative(activation, cblock(v.states.at(st.t), N, H, v.states.ld), dz);
  }

  void finish_backward(const Direction<S>&, const GradientArgs<S>&, CellBackwardState<S>&) const {}
};

}  // namespace

template <class S>
void single_gate_rnn_forward(const SingleGateRNNOptions& o, const RNNShape& shape,
                             const ForwardArgs<S>& args) {
  recurrent_forward(SingleGateCell<S>{o.activation}, shape, o.reverse, args);
}

template <class S>
void single_gate_rnn_gradients(const SingleGateRNNOptions& o, const RNNShape& shape,
                               const GradientArgs<S>& args) {
  recurrent_gradients(SingleGateCell<S>{o.activation}, shape, o.reverse, args);
}

template void single_gate_rnn_forward<float>(const SingleGateRNNOptions&, const RNNShape&,
                                             const ForwardArgs<float>&);
template void single_gate_rnn_forward<double>(const SingleGateRNNOptions&, const RNNShape&,
                                              const ForwardArgs<double>&);
template void single_gate_rnn_gradients<float>(const SingleGateRNNOptions&, const RNNShape&,
                                               const GradientArgs<float>&);
template void single_gate_rnn_gradients<double>(const SingleGateRNNOptions&, const RNNShape&,
                                                const GradientArgs<double>&);

}  // namespace rnngraph
