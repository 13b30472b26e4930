#include "rnngraph/gru.hpp"

#include "rnngraph/recurrence.hpp"
#include "vector_math.hpp"

namespace rnngraph {
namespace {

template <class S>
struct GRUCell {
  static constexpr const char* name = "GRU";
  static constexpr bool has_cell_state = false;
  // With the reset gate applied to the recurrent product, dL/dQ_o = dL/dx'_o ⊙ r.
  static constexpr bool separate_recurrent_gradient = true;
  static constexpr bool rebuilds_states_in_loop = false;
  static constexpr bool direct_state_gradient = true;
  GRUOptions o;
  // Column block of each gate along 3H (SPEC.md section 3): [z, r, o] or [r, z, o].
  // The candidate o is last in both orders, so the first 2H rows of R are always z and r.
  Index gz = 0, gr = 1, go = 2;

  explicit GRUCell(const GRUOptions& options) : o(options) {
    if (o.resetGateFirst) { gz = 1; gr = 0; }
  }
  // resetAfter: one GEMM over all three gates; otherwise the candidate's product needs r first.
  int recurrent_gates() const { return o.resetAfter ? 3 : 2; }

  static auto row(const S* p, Index H) { return Eigen::Map<const Eigen::Array<S, 1, Eigen::Dynamic>>(p, H); }
  static const S* candidate_weight(const Direction<S>& dir) { return dir.recurrentWeight + 2 * dir.H * dir.H; }

  void forward_step(const Direction<S>& dir, const ForwardStep<S>& st) const {
    const Index N = dir.N, H = dir.H, ld = st.ld_gates;
    auto gate = [&](Index g) { return block(st.gates + g * H, N, H, ld); };
    // x' = x_t·Wᵀ + b for all three gates, then the recurrent products of z and r.
    auto x_prime = block(st.gates, N, 3 * H, ld);
    x_prime = cblock(st.xp, N, 3 * H, st.ld_xp);
    if (st.bias) x_prime.rowwise() += row(st.bias, 3 * H);
    block(st.gates, N, 2 * H, ld) += cblock(st.q, N, 2 * H, 3 * H);
    activate(o.updateGateActivation, gate(gz));
    activate(o.resetGateActivation, gate(gr));
    if (o.resetAfter) {
      // o = act_o(x'_o + r ⊙ (hm·R_oᵀ + b2))
      auto qo = block(st.q + 2 * H, N, H, 3 * H);
      if (dir.secondaryBias) qo.rowwise() += row(dir.secondaryBias, H);
      gate(go) += gate(gr) * qo;
    } else {
      // o = act_o(x'_o + (hm ⊙ r)·R_oᵀ): the second, dependent GEMM of this step.
      auto hmr = block(st.scratch, N, H, H);
      hmr = cblock(st.hm, N, H, st.ld_hm) * gate(gr);
      dir.times_weight_t(N, 2, 1, st.scratch, H, st.scratch + N * H, H);
      gate(go) += cblock(st.scratch + N * H, N, H, H);
    }
    activate(o.outputGateActivation, gate(go));
    const auto hp = cblock(st.hp, N, H, st.ld_hp);
    auto h = block(st.h, N, H, st.ld_h);
    // flipZ=False: h = z ⊙ hp + (1 − z) ⊙ o; flipZ=True swaps the roles (SPEC.md, pinned).
    if (o.flipZ) h = (S(1) - gate(gz)) * hp + gate(gz) * gate(go);
    else h = gate(gz) * hp + (S(1) - gate(gz)) * gate(go);
  }

  Seq<const S> state_sequence(const Direction<S>&, CellBackwardState<S>& st) const {
    return st.output_fwd;
  }

  void prepare_backward(const Direction<S>& dir, CellBackwardState<S>& st) const {
    if (!o.resetAfter) return;
    // hm·R_oᵀ + b2 for every step at once (SPEC.md section 5): one GEMM [T·N, H] x [H, H].
    const Index TN = dir.T * dir.N, H = dir.H;
    st.buffer_a.resize(static_cast<size_t>(TN * H));
    gemm(Trans::no, Trans::yes, TN, H, H, S(1), st.views.hm.base, H, candidate_weight(dir), H, S(0),
         st.buffer_a.data(), H);
    detail::add_bias_rows(st.buffer_a.data(), TN, H, dir.secondaryBias);
    st.views.q_o = Seq<const S>{st.buffer_a.data(), dir.N * H, H};
  }

  void backward_step(const Direction<S>& dir, const BackwardStep<S>& st,
                     const BackwardViews<S>& v) const {
    const Index N = dir.N, H = dir.H, t = st.t, ldg = v.gates.ld;
    const S* a = v.gates.at(t);
    const auto z = cblock(a + gz * H, N, H, ldg);
    const auto r = cblock(a + gr * H, N, H, ldg);
    const auto og = cblock(a + go * H, N, H, ldg);
    const auto hp = cblock(v.hp.at(t), N, H, v.hp.ld);
    const auto dh = cblock(st.dh, N, H, H);
    auto dA = [&](Index g) { return block(st.dxp + g * H, N, H, st.ld_dxp); };
    auto dq = [&](Index g) { return block(st.dq + g * H, N, H, st.ld_dxp); };

    if (o.flipZ) {
      dA(go) = dh * z;
      dA(gz) = dh * (og - hp);
      block(st.dhp, N, H, H) = dh * (S(1) - z);
    } else {
      dA(go) = dh * (S(1) - z);
      dA(gz) = dh * (hp - og);
      block(st.dhp, N, H, H) = dh * z;
    }
    multiply_by_derivative(o.outputGateActivation, og, dA(go));
    multiply_by_derivative(o.updateGateActivation, z, dA(gz));
    if (o.resetAfter) {
      dq(go) = dA(go) * r;
      dA(gr) = dA(go) * cblock(v.q_o.at(t), N, H, v.q_o.ld);
      block(st.dhm, N, H, H).setZero();
    } else {
      dq(go) = dA(go);
      // g = dL/d(hm ⊙ r) = dA_o·R_o, then split between r and hm.
      dir.times_weight(N, 2, 1, st.dxp + go * H, st.ld_dxp, S(0), st.scratch, H);
      const auto g = cblock(st.scratch, N, H, H);
      dA(gr) = g * cblock(v.hm.at(t), N, H, v.hm.ld);
      block(st.dhm, N, H, H) = g * r;
    }
    multiply_by_derivative(o.resetGateActivation, r, dA(gr));
    block(st.dq, N, 2 * H, st.ld_dxp) = block(st.dxp, N, 2 * H, st.ld_dxp);
  }

  void finish_backward(const Direction<S>& dir, const GradientArgs<S>& a,
                       CellBackwardState<S>& st) const {
    const Index TN = dir.T * dir.N, H = dir.H, N = dir.N;
    const S* dq_o = st.dq_all + 2 * H;
    const auto& v = st.views;
    if (!o.resetAfter) {
      // dR_o = Σ_t dA_oᵀ·(hm ⊙ r): one GEMM over all steps.
      st.buffer_b.resize(static_cast<size_t>(TN * H));
      detail::for_each_step(dir.T, N * H, [&](Index t) {
        block(st.buffer_b.data() + t * N * H, N, H, H) =
            cblock(v.hm.at(t), N, H, v.hm.ld) * cblock(v.gates.at(t) + gr * H, N, H, v.gates.ld);
      });
      S* dR_o = a.recurrentWeightGrad + dir.d * 3 * H * H + 2 * H * H;
      gemm(Trans::yes, Trans::no, H, H, TN, S(1), dq_o, st.ld_dxp, st.buffer_b.data(), H, S(0), dR_o, H);
    }
    if (a.secondaryBiasGrad) {
      S* db2 = a.secondaryBiasGrad + dir.d * H;
      // b2 only enters with resetAfter; otherwise its gradient is zero (SPEC.md section 6).
      if (o.resetAfter) detail::column_sums(dq_o, TN, H, st.ld_dxp, db2);
      else std::fill(db2, db2 + H, S(0));
    }
  }
};

}  // namespace

template <class S>
void gru_forward(const GRUOptions& o, const RNNShape& shape, const ForwardArgs<S>& args) {
  recurrent_forward(GRUCell<S>(o), shape, o.reverse, args);
}

template <class S>
void gru_gradients(const GRUOptions& o, const RNNShape& shape, const GradientArgs<S>& args) {
  require(args.outputFwd != nullptr, "GRUGradients: outputFwd is required");
  recurrent_gradients(GRUCell<S>(o), shape, o.reverse, args);
}

template void gru_forward<float>(const GRUOptions&, const RNNShape&, const ForwardArgs<float>&);
template void gru_forward<double>(const GRUOptions&, const RNNShape&, const ForwardArgs<double>&);
template void gru_gradients<float>(const GRUOptions&, const RNNShape&, const GradientArgs<float>&);
template void gru_gradients<double>(const GRUOptions&, const RNNShape&, const GradientArgs<double>&);

}  // namespace rnngraph
