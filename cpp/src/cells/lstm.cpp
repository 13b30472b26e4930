// The LSTM's step math (SPEC.md sections 5 and 6); the driver does the rest.
#include "rnngraph/lstm.hpp"

#include "driver/recurrence.hpp"
#include "vector_math.hpp"

namespace rnngraph {
namespace {

template <class S>
struct LSTMCell : CellDefaults<S, LSTMOptions::gates> {
  static constexpr const char* name = "LSTM";
  static constexpr bool has_cell_state = true;
  static constexpr SavedSequence saved = SavedSequence::cellOutputFwd;
  // No outputFwd for the LSTM: its backward steps rebuild h_t = a_o ⊙ act(c_t) from zState and
  // cellOutputFwd (act(c_t) is needed there anyway, for the derivative).
  static constexpr bool rebuilds_states_in_loop = true;
  static constexpr bool column_steps = true;
  LSTMOptions o;
  // Column block of each gate along 4H (SPEC.md section 3): [i, f, z, o] or [i, z, f, o].
  Index gi = 0, gf = 1, gz = 2, go = 3;

  explicit LSTMCell(const LSTMOptions& options) : o(options) {
    if (o.forgetGateLast) {
      gf = 2;
      gz = 1;
    }
  }
  // One pass over each row's units [col0, col1), a vector of columns at a time with all four
  // gates in registers.
  void forward_step(const Direction<S>& dir, const ForwardStep<S>& st) const {
    using V = typename simd::Vec<S>::type;
    const Index H = dir.H;
    simd::for_each_row_vector<S>(dir.N, st.col0, st.col1, [&](Index n, simd::RowVector<S> at) {
      const S* xp = st.xp + n * st.ld_xp;
      const S* q = st.q + n * 4 * H;
      S* a = st.gates + n * st.ld_gates;
      const V c_prev = at.load(st.cp + n * st.ld_cp);
      // a_g = act_g(x'_g + hm·R_gᵀ [+ p_g ⊙ c_prev]): the peephole reads the previous cell
      // on all four gates (Apple's form, SPEC.md section 5).
      auto gate = [&](Index g, Activation act) {
        V x = at.load(xp + g * H);
        if (st.bias) x += at.load(st.bias + g * H);
        x += at.load(q + g * H);
        if (dir.peephole) x += c_prev * at.load(dir.peephole + g * H);
        x = simd::activate<S>(act, x);
        at.store(a + g * H, x);
        return x;
      };
      const V i = gate(gi, o.inputGateActivation);
      const V f = gate(gf, o.forgetGateActivation);
      const V z = gate(gz, o.cellGateActivation);
      const V out = gate(go, o.outputGateActivation);
      const V c_new = f * c_prev + i * z;
      at.store(st.c + n * st.ld_c, c_new);
      at.store(st.h + n * st.ld_h, out * simd::activate<S>(o.activation, c_new));
    });
  }

  void prepare_backward(const Direction<S>& dir, CellBackwardState<S>& st) const {
    const Index N = dir.N, H = dir.H, ld = dir.state_ld;
    st.views.cell = st.cell_fwd;
    // The cell before the first processed step: initCell, or zeros.
    if (st.init_cell) {
      st.views.cell_init = st.init_cell;
      st.views.cell_init_ld = ld;
    } else {
      st.buffer_c = zeroed_buffer<S>(static_cast<size_t>(N * H));
      st.views.cell_init = st.buffer_c.data();
      st.views.cell_init_ld = H;
    }
    st.carry.resize(static_cast<size_t>(N * H));
    auto dc = block(st.carry.data(), N, H, H);
    // dL/d(final cell) enters the cell gradient at the last processed step.
    if (st.cell_gradient) dc = cblock(st.cell_gradient, N, H, ld);
    else dc.setZero();
    st.views.carry = st.carry.data();
    // The internal cellSequenceGradient, dL/dc_t given for every step (base nullptr: none).
    st.views.cell_grad = st.cell_sequence_gradient;
  }

  // One pass over each row, as the forward step. dc is the carried dL/dc (SPEC.md section 6).
  // With a cellSequenceGradient the step is a second instantiation of the same loop, so
  // without one no step does anything more than before.
  void backward_step(const Direction<S>& dir, const BackwardStep<S>& st,
                     const BackwardViews<S>& v) const {
    if (v.cell_grad.base) backward_rows<true>(dir, st, v);
    else backward_rows<false>(dir, st, v);
  }

  template <bool given_cell_sequence_gradient>
  void backward_rows(const Direction<S>& dir, const BackwardStep<S>& st,
                     const BackwardViews<S>& v) const {
    using V = typename simd::Vec<S>::type;
    const Index H = dir.H, t = st.t;
    Index ld_cp = 0;
    const S* cp_rows = v.previous_cell(dir, t, ld_cp);
    for (Index n = 0; n < dir.N; ++n) {
      const S* a = v.gates.at(t) + n * v.gates.ld;
      const S* c = v.cell.at(t) + n * v.cell.ld;
      const S* cp = cp_rows + n * ld_cp;
      const S* dc_given =
          given_cell_sequence_gradient ? v.cell_grad.at(t) + n * v.cell_grad.ld : nullptr;
      const S* dh = st.dh + n * H;
      S* carry = v.carry + n * H;
      S* dA = st.dxp + n * st.ld_dxp;
      S* h_next = st.next_state ? st.next_state + n * st.ld_next_state : nullptr;
      const S* mask = st.next_mask ? st.next_mask + n * dir.state_ld : nullptr;
      simd::for_each_vector<S>(H, [&](Index j, Index len) {
        const simd::RowVector<S> at{j, len};
        const V ai = at.load(a + gi * H), af = at.load(a + gf * H);
        const V az = at.load(a + gz * H), ao = at.load(a + go * H);
        const V y = simd::activate<S>(o.activation, at.load(c));  // act(c_t)
        const V g = at.load(dh), c_prev = at.load(cp);
        // h_t = a_o ⊙ act(c_t) is the next step's previous state (times its mask).
        if (h_next) at.store(h_next, mask ? y * ao * at.load(mask) : y * ao);
        // dL/dc_t (SPEC.md section 5): the carry (through c_{t+1} = a_f ⊙ c_t + ..., or
        // cellGradient at the last processed step) + dh ⊙ a_o ⊙ act'(c_t) (through
        // h_t = a_o ⊙ act(c_t)) + cellSequenceGradient[t] when given (c_t as an output).
        V dc = at.load(carry) + simd::times_derivative<S>(o.activation, y, g * ao);
        if constexpr (given_cell_sequence_gradient) dc += at.load(dc_given);
        const V d_o = simd::times_derivative<S>(o.outputGateActivation, ao, g * y);
        // c = a_f ⊙ c_prev + a_i ⊙ a_z.
        const V d_i = simd::times_derivative<S>(o.inputGateActivation, ai, dc * az);
        const V d_z = simd::times_derivative<S>(o.cellGateActivation, az, dc * ai);
        const V d_f = simd::times_derivative<S>(o.forgetGateActivation, af, dc * c_prev);
        at.store(dA + gi * H, d_i);
        at.store(dA + gf * H, d_f);
        at.store(dA + gz * H, d_z);
        at.store(dA + go * H, d_o);
        // dL/dc_prev through the forget gate and through every peephole term.
        dc *= af;
        if (dir.peephole) {
          const S* p = dir.peephole;
          dc += d_i * at.load(p + gi * H) + d_f * at.load(p + gf * H) + d_z * at.load(p + gz * H) +
                d_o * at.load(p + go * H);
        }
        at.store(carry, dc);
      });
    }
  }

  void finish_backward(const Direction<S>& dir, const GradientArgs<S>& a,
                       CellBackwardState<S>& st) const {
    const Index N = dir.N, H = dir.H;
    // dL/dp_g = Σ_t,n dA_g ⊙ c_prev, rows added in the order of t, then n.
    if (a.peepholeGrad) {
      for (Index g = 0; g < 4; ++g) {
        Eigen::Map<Eigen::Array<S, 1, Eigen::Dynamic>> out(a.peepholeGrad + dir.d * 4 * H + g * H,
                                                           H);
        out.setZero();
        for (Index t = 0; t < dir.T; ++t) {
          Index ld_cp = 0;
          const S* cp = st.views.previous_cell(dir, t, ld_cp);
          const S* dA = st.dxp_all + t * N * st.ld_dxp + g * H;
          for (Index n = 0; n < N; ++n) {
            out += cblock(dA + n * st.ld_dxp, 1, H, H) * cblock(cp + n * ld_cp, 1, H, H);
          }
        }
      }
    }
    if (st.init_cell_grad)
      block(st.init_cell_grad, N, H, dir.state_ld) = block(st.carry.data(), N, H, H);
  }
};

}  // namespace

RNNGRAPH_CELL_ENTRY_POINTS(lstm, LSTMOptions, LSTMCell)

}  // namespace rnngraph
