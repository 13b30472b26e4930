// The GRU's step math (SPEC.md sections 5 and 6); the driver does the rest.
#include "rnngraph/gru.hpp"

#include "driver/recurrence.hpp"
#include "vector_math.hpp"

namespace rnngraph {
namespace {

template <class S>
struct GRUCell : CellDefaults<S, GRUOptions::gates> {
  static constexpr const char* name = "GRU";
  static constexpr SavedSequence saved = SavedSequence::outputFwd;  // h_t for hp and hm
  // With the reset gate applied to the recurrent product, dL/dQ_o = dL/dx'_o ⊙ r.
  static constexpr bool separate_recurrent_gradient = true;
  // z ⊙ dh reaches h[t-1] directly, and reset-before's (hm ⊙ r) term through r.
  static constexpr bool direct_state_gradient = true;
  // Reset-before: o = act_o(x'_o + (hm ⊙ r)·R_oᵀ) needs r of this step first.
  static constexpr bool has_dependent_product = true;
  // Without the dependent product (resetAfter), each unit's step reads only its own columns.
  static constexpr bool column_steps = true;
  GRUOptions o;
  // Column block of each gate along 3H (SPEC.md section 3): [z, r, o] or [r, z, o].
  // The candidate o is last in both orders, so the first 2H rows of R are always z and r.
  Index gz = 0, gr = 1, go = 2;

  explicit GRUCell(const GRUOptions& options) : o(options) {
    if (o.resetGateFirst) {
      gz = 1;
      gr = 0;
    }
  }
  // resetAfter: one product over all three gates; otherwise the candidate's is the dependent one.
  int recurrent_gates() const { return o.resetAfter ? 3 : 2; }
  bool uses_dependent_product() const { return !o.resetAfter; }
  // resetAfter: hm·R_oᵀ + b2 of every step, which the backward reads (prepare_backward).
  bool keeps_product() const { return keeps_recurrent_product(o); }

  static const S* candidate_weight(const Direction<S>& dir) {
    return dir.recurrentWeight + 2 * dir.H * dir.H;
  }

  // ---- forward: z and r, the candidate's recurrent term, then o and h ----
  // Each pass runs over the rows and the units [col0, col1) a vector at a time (a team may
  // give a thread some of the units: column_steps).
  using V = typename simd::Vec<S>::type;
  using At = simd::RowVector<S>;
  // x' = x_t·Wᵀ + b of gate g, row n.
  static V x_prime(const ForwardStep<S>& st, Index H, Index n, At at, Index g) {
    V x = at.load(st.xp + n * st.ld_xp + g * H);
    if (st.bias) x += at.load(st.bias + g * H);
    return x;
  }
  // z and r: act_g(x'_g + hm·R_gᵀ), into zState; returns r.
  V update_and_reset(const ForwardStep<S>& st, Index H, Index n, At at) const {
    S* a = st.gates + n * st.ld_gates;
    const S* q = st.q + n * 3 * H;
    const V z =
        simd::activate<S>(o.updateGateActivation, x_prime(st, H, n, at, gz) + at.load(q + gz * H));
    const V r =
        simd::activate<S>(o.resetGateActivation, x_prime(st, H, n, at, gr) + at.load(q + gr * H));
    at.store(a + gz * H, z);
    at.store(a + gr * H, r);
    return r;
  }
  // o = act_o(its pre-activation), into zState, and h: flipZ=False: h = z ⊙ hp + (1 − z) ⊙ o;
  // flipZ=True swaps the roles (SPEC.md, pinned).
  void candidate_and_state(const ForwardStep<S>& st, Index H, Index n, At at, V pre_o) const {
    S* a = st.gates + n * st.ld_gates;
    const V og = simd::activate<S>(o.outputGateActivation, pre_o);
    at.store(a + go * H, og);
    const V z = at.load(a + gz * H), hp = at.load(st.hp + n * st.ld_hp), one = V{} + S(1);
    at.store(st.h + n * st.ld_h, o.flipZ ? (one - z) * hp + z * og : z * hp + (one - z) * og);
  }
  // resetAfter: o = act_o(x'_o + r ⊙ (hm·R_oᵀ + b2)), hm·R_oᵀ from the step's one product.
  void forward_step(const Direction<S>& dir, const ForwardStep<S>& st) const {
    const Index H = dir.H;
    simd::for_each_row_vector<S>(dir.N, st.col0, st.col1, [&](Index n, At at) {
      const V r = update_and_reset(st, H, n, at);
      V q_o = at.load(st.q + n * 3 * H + go * H);
      if (dir.secondaryBias) q_o += at.load(dir.secondaryBias);
      if (st.product) at.store(st.product + n * st.ld_h, q_o);  // for the gradient op
      candidate_and_state(st, H, n, at, x_prime(st, H, n, at, go) + r * q_o);
    });
  }
  // Reset-before: o = act_o(x'_o + (hm ⊙ r)·R_oᵀ), the driver's product of hm ⊙ r (scratch,
  // [N, H]; the product lands after it).
  DependentProduct<S> forward_before_product(const Direction<S>& dir,
                                             const ForwardStep<S>& st) const {
    const Index N = dir.N, H = dir.H;
    simd::for_each_row_vector<S>(N, st.col0, st.col1, [&](Index n, At at) {
      const V r = update_and_reset(st, H, n, at);
      at.store(st.scratch + n * H, at.load(st.hm + n * st.ld_hm) * r);
    });
    return {go, st.scratch, H, st.scratch + N * H, H};
  }
  void forward_after_product(const Direction<S>& dir, const ForwardStep<S>& st) const {
    const Index N = dir.N, H = dir.H;
    const S* product = st.scratch + N * H;
    simd::for_each_row_vector<S>(N, st.col0, st.col1, [&](Index n, At at) {
      candidate_and_state(st, H, n, at, x_prime(st, H, n, at, go) + at.load(product + n * H));
    });
  }

  void prepare_backward(const Direction<S>& dir, CellBackwardState<S>& st) const {
    if (!o.resetAfter || st.views.q_o.base) return;  // (kept by the forward op)
    // hm·R_oᵀ + b2 for every step at once (SPEC.md section 5): one GEMM [T·N, H] x [H, H].
    const Index TN = dir.T * dir.N, H = dir.H;
    st.buffer_a.resize(static_cast<size_t>(TN * H));
    gemm(Trans::no, Trans::yes, TN, H, H, S(1), st.views.hm.base, H, candidate_weight(dir), H, S(0),
         st.buffer_a.data(), H);
    detail::add_bias_rows(st.buffer_a.data(), TN, H, dir.secondaryBias);
    st.views.q_o = Seq<const S>{st.buffer_a.data(), dir.N * H, H};
  }

  // ---- backward: dA_o, dA_z and dh's direct path, then r's share ----
  struct Views {
    ConstBlock<S> z, r, og;
  };
  Views gates_at(const Direction<S>& dir, const BackwardStep<S>& st,
                 const BackwardViews<S>& v) const {
    const S* a = v.gates.at(st.t);
    const Index N = dir.N, H = dir.H, ld = v.gates.ld;
    return {cblock(a + gz * H, N, H, ld), cblock(a + gr * H, N, H, ld),
            cblock(a + go * H, N, H, ld)};
  }
  Block<S> dA(const Direction<S>& dir, const BackwardStep<S>& st, Index g) const {
    return block(st.dxp + g * dir.H, dir.N, dir.H, st.ld_dxp);
  }
  Block<S> dq(const Direction<S>& dir, const BackwardStep<S>& st, Index g) const {
    return block(st.dq + g * dir.H, dir.N, dir.H, st.ld_dxp);
  }
  // Through h = z ⊙ hp + (1 − z) ⊙ o (or flipZ's form): dA_o, dA_z and dhp.
  void update_and_candidate(const Direction<S>& dir, const BackwardStep<S>& st,
                            const BackwardViews<S>& v) const {
    const Index N = dir.N, H = dir.H;
    const Views g = gates_at(dir, st, v);
    const auto hp = cblock(v.hp.at(st.t), N, H, v.hp.ld);
    const auto dh = cblock(st.dh, N, H, H);
    if (o.flipZ) {
      dA(dir, st, go) = dh * g.z;
      dA(dir, st, gz) = dh * (g.og - hp);
      block(st.dhp, N, H, H) = dh * (S(1) - g.z);
    } else {
      dA(dir, st, go) = dh * (S(1) - g.z);
      dA(dir, st, gz) = dh * (hp - g.og);
      block(st.dhp, N, H, H) = dh * g.z;
    }
    multiply_by_derivative(o.outputGateActivation, g.og, dA(dir, st, go));
    multiply_by_derivative(o.updateGateActivation, g.z, dA(dir, st, gz));
  }
  // r's derivative, and dQ = dA for z and r.
  void reset(const Direction<S>& dir, const BackwardStep<S>& st, const BackwardViews<S>& v) const {
    multiply_by_derivative(o.resetGateActivation, gates_at(dir, st, v).r, dA(dir, st, gr));
    block(st.dq, dir.N, 2 * dir.H, st.ld_dxp) = block(st.dxp, dir.N, 2 * dir.H, st.ld_dxp);
  }
  // resetAfter: dQ_o = dA_o ⊙ r, dA_r = dA_o ⊙ (hm·R_oᵀ + b2); no term reaches hm directly.
  void backward_step(const Direction<S>& dir, const BackwardStep<S>& st,
                     const BackwardViews<S>& v) const {
    const Index N = dir.N, H = dir.H;
    update_and_candidate(dir, st, v);
    dq(dir, st, go) = dA(dir, st, go) * gates_at(dir, st, v).r;
    dA(dir, st, gr) = dA(dir, st, go) * cblock(v.q_o.at(st.t), N, H, v.q_o.ld);
    block(st.dhm, N, H, H).setZero();
    reset(dir, st, v);
  }
  // Reset-before: the driver's product g = dL/d(hm ⊙ r) = dA_o·R_o (scratch), then split
  // between r and hm.
  DependentProduct<S> backward_before_product(const Direction<S>& dir, const BackwardStep<S>& st,
                                              const BackwardViews<S>& v) const {
    update_and_candidate(dir, st, v);
    dq(dir, st, go) = dA(dir, st, go);
    return {go, st.dxp + go * dir.H, st.ld_dxp, st.scratch, dir.H};
  }
  void backward_after_product(const Direction<S>& dir, const BackwardStep<S>& st,
                              const BackwardViews<S>& v) const {
    const Index N = dir.N, H = dir.H;
    const auto g = cblock(st.scratch, N, H, H);
    dA(dir, st, gr) = g * cblock(v.hm.at(st.t), N, H, v.hm.ld);
    block(st.dhm, N, H, H) = g * gates_at(dir, st, v).r;
    reset(dir, st, v);
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
      gemm(Trans::yes, Trans::no, H, H, TN, S(1), dq_o, st.ld_dxp, st.buffer_b.data(), H, S(0),
           dR_o, H);
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

RNNGRAPH_CELL_ENTRY_POINTS(gru, GRUOptions, GRUCell)

}  // namespace rnngraph
