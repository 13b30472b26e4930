#include "rnngraph/lstm.hpp"

#include "rnngraph/recurrence.hpp"

namespace rnngraph {
namespace {

template <class S>
struct LSTMCell {
  static constexpr const char* name = "LSTM";
  static constexpr bool has_cell_state = true;
  static constexpr bool separate_recurrent_gradient = false;
  LSTMOptions o;
  // Column block of each gate along 4H (SPEC.md section 3): [i, f, z, o] or [i, z, f, o].
  Index gi = 0, gf = 1, gz = 2, go = 3;

  explicit LSTMCell(const LSTMOptions& options) : o(options) {
    if (o.forgetGateLast) { gf = 2; gz = 1; }
  }
  int recurrent_gates() const { return 4; }

  static auto row(const S* p, Index H) { return Eigen::Map<const Eigen::Array<S, 1, Eigen::Dynamic>>(p, H); }

  void forward_step(const Direction<S>& dir, const ForwardStep<S>& st) const {
    const Index N = dir.N, H = dir.H, ld = st.ld_gates;
    auto gate = [&](Index g) { return block(st.gates + g * H, N, H, ld); };
    block(st.gates, N, 4 * H, ld) = cblock(st.xp, N, 4 * H, st.ld_xp) + cblock(st.q, N, 4 * H, 4 * H);
    const auto cp = cblock(st.cp, N, H, st.ld_cp);
    // Peephole on all four gates, from the previous cell (Apple's form, SPEC.md section 5).
    if (dir.peephole) {
      for (Index g = 0; g < 4; ++g) gate(g) += cp.rowwise() * row(dir.peephole + g * H, H);
    }
    activate(o.inputGateActivation, gate(gi));
    activate(o.forgetGateActivation, gate(gf));
    activate(o.cellGateActivation, gate(gz));
    activate(o.outputGateActivation, gate(go));
    auto c = block(st.c, N, H, st.ld_c);
    c = gate(gf) * cp + gate(gi) * gate(gz);
    auto h = block(st.h, N, H, st.ld_h);
    h = c;
    activate(o.activation, h);
    h *= gate(go);
  }

  // No outputFwd for the LSTM: h[t] = a_o ⊙ act(c[t]) is rebuilt once from zState and
  // cellOutputFwd, and act(c) is kept for the derivative (the only transcendental needed).
  Seq<const S> state_sequence(const Direction<S>& dir, CellBackwardState<S>& st) const {
    const Index T = dir.T, N = dir.N, H = dir.H;
    const auto& gates = st.views.gates;
    st.buffer_a.resize(static_cast<size_t>(T * N * H));  // act(c)
    st.buffer_b.resize(static_cast<size_t>(T * N * H));  // h
    for (Index t = 0; t < T; ++t) {
      auto act_c = block(st.buffer_a.data() + t * N * H, N, H, H);
      act_c = cblock(st.cell_fwd.at(t), N, H, st.cell_fwd.ld);
      activate(o.activation, act_c);
      block(st.buffer_b.data() + t * N * H, N, H, H) =
          act_c * cblock(gates.at(t) + go * H, N, H, gates.ld);
    }
    st.views.act_c = Seq<const S>{st.buffer_a.data(), N * H, H};
    return Seq<const S>{st.buffer_b.data(), N * H, H};
  }

  void prepare_backward(const Direction<S>& dir, CellBackwardState<S>& st) const {
    const Index N = dir.N, H = dir.H, ld = dir.state_ld;
    st.buffer_c.resize(static_cast<size_t>(dir.T * N * H));  // previous cell per step
    detail::previous_sequence(dir, st.cell_fwd, st.init_cell, ld, st.buffer_c.data());
    st.views.cp = Seq<const S>{st.buffer_c.data(), N * H, H};
    st.carry.resize(static_cast<size_t>(N * H));
    auto dc = block(st.carry.data(), N, H, H);
    // dL/d(final cell) enters the cell gradient at the last processed step.
    if (st.cell_gradient) dc = cblock(st.cell_gradient, N, H, ld);
    else dc.setZero();
    st.views.carry = st.carry.data();
  }

  void backward_step(const Direction<S>& dir, const BackwardStep<S>& st,
                     const BackwardViews<S>& v) const {
    const Index N = dir.N, H = dir.H, t = st.t, ldg = v.gates.ld;
    const S* a = v.gates.at(t);
    auto act = [&](Index g) { return cblock(a + g * H, N, H, ldg); };
    auto dA = [&](Index g) { return block(st.dxp + g * H, N, H, st.ld_dxp); };
    const auto dh = cblock(st.dh, N, H, H);
    const auto act_c = cblock(v.act_c.at(t), N, H, v.act_c.ld);
    const auto cp = cblock(v.cp.at(t), N, H, v.cp.ld);
    auto dc = block(v.carry, N, H, H);
    auto tmp = block(st.scratch, N, H, H);

    // h = a_o ⊙ act(c): dL/dc += dh ⊙ a_o ⊙ act'(c).
    tmp = dh * act(go);
    multiply_by_derivative(o.activation, act_c, tmp);
    dc += tmp;
    dA(go) = dh * act_c;
    multiply_by_derivative(o.outputGateActivation, act(go), dA(go));
    // c = a_f ⊙ cp + a_i ⊙ a_z.
    dA(gi) = dc * act(gz);
    multiply_by_derivative(o.inputGateActivation, act(gi), dA(gi));
    dA(gz) = dc * act(gi);
    multiply_by_derivative(o.cellGateActivation, act(gz), dA(gz));
    dA(gf) = dc * cp;
    multiply_by_derivative(o.forgetGateActivation, act(gf), dA(gf));
    // dL/dcp through the forget gate and through every peephole term.
    dc *= act(gf);
    if (dir.peephole) {
      for (Index g = 0; g < 4; ++g) dc += dA(g).rowwise() * row(dir.peephole + g * H, H);
    }
    block(st.dhm, N, H, H).setZero();
    block(st.dhp, N, H, H).setZero();
  }

  void finish_backward(const Direction<S>& dir, const GradientArgs<S>& a,
                       CellBackwardState<S>& st) const {
    const Index N = dir.N, H = dir.H, TN = dir.T * N;
    // dL/dp_g = Σ_t,n dA_g ⊙ cp.
    if (a.peepholeGrad) {
      for (Index g = 0; g < 4; ++g) {
        detail::column_sums_of_products(st.dxp_all + g * H, st.ld_dxp, st.buffer_c.data(), H, TN, H,
                                        a.peepholeGrad + dir.d * 4 * H + g * H);
      }
    }
    if (st.init_cell_grad) block(st.init_cell_grad, N, H, dir.state_ld) = block(st.carry.data(), N, H, H);
  }
};

}  // namespace

template <class S>
void lstm_forward(const LSTMOptions& o, const RNNShape& shape, const ForwardArgs<S>& args) {
  recurrent_forward(LSTMCell<S>(o), shape, o.reverse, args);
}

template <class S>
void lstm_gradients(const LSTMOptions& o, const RNNShape& shape, const GradientArgs<S>& args) {
  require(args.cellOutputFwd != nullptr, "LSTMGradients: cellOutputFwd is required");
  recurrent_gradients(LSTMCell<S>(o), shape, o.reverse, args);
}

template void lstm_forward<float>(const LSTMOptions&, const RNNShape&, const ForwardArgs<float>&);
template void lstm_forward<double>(const LSTMOptions&, const RNNShape&, const ForwardArgs<double>&);
template void lstm_gradients<float>(const LSTMOptions&, const RNNShape&, const GradientArgs<float>&);
template void lstm_gradients<double>(const LSTMOptions&, const RNNShape&, const GradientArgs<double>&);

}  // namespace rnngraph
