// The recurrence driver's entry points (README.md, "How the kernels are built"): a cell
// (cell.hpp) supplies its element-wise math; the driver runs the input projection, the
// packing of R, the time loops of each direction on the threads (work_split.hpp:
// row_loops.hpp or team_loops.hpp), and the weight gradients' products after the loops.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "profile.hpp"
#include "projection.hpp"
#include "row_loops.hpp"
#include "team_loops.hpp"

namespace rnngraph {

namespace detail {

// The forward step's product kernel: forced, or packed panels when the weights were packed
// earlier or a copy pays off (tuning::kPackWeights*), else gemm's choice on the arrays.
// Packed too when gemm would give the step's product to the BLAS (more than kDotRows rows):
// the copy costs under 1/32 of the product's flops, and the panel kernel sums each element
// the same way whatever rows a thread has, where the BLAS picks kernels by size.
inline ProductPath forward_product(const RNNShape& s, bool packed_earlier) {
  const ProductPath forced = forced_paths().product;
  if (forced != ProductPath::automatic) return forced;
  const bool pack = (s.T * s.N >= tuning::kPackWeightsRows &&
                     (s.N >= tuning::kPackWeightsBatch || s.H <= tuning::kPackWeightsHidden)) ||
                    s.N > tuning::kDotRows;
  return packed_earlier || pack ? ProductPath::packed : ProductPath::automatic;
}

// The gradients of a call that takes no step (T = 0 or N = 0): the weights' are zeros, the
// source's is empty, and the initial state's and cell's are the final ones' (with no step the
// final state is the initial state: docs/concepts.md), or zeros without them. No buffer the
// time loops need is made, so an empty sequence of a huge batch costs only its outputs.
template <class S>
void stepless_gradients(const RNNShape& s, const GradientArgs<S>& a) {
  const Index D = s.D(), H = s.H, GH = s.GH(), states = s.N * s.DH();
  auto zeros = [](S* p, Index count) {
    if (p) std::fill(p, p + count, S(0));
  };
  auto pass = [&](S* out, const S* final_gradient) {
    if (out && final_gradient) std::copy(final_gradient, final_gradient + states, out);
    else zeros(out, states);
  };
  zeros(a.recurrentWeightGrad, D * GH * H);
  if (s.has_input_weight) zeros(a.inputWeightGrad, s.DGH() * s.I);
  zeros(a.biasGrad, s.DGH());
  zeros(a.peepholeGrad, D * 4 * H);
  zeros(a.secondaryBiasGrad, D * H);
  pass(a.initStateGrad, a.stateGradient);
  pass(a.initCellGrad, a.cellGradient);
}

}  // namespace detail

template <class Cell, class S>
void recurrent_forward(const Cell& cell, const RNNShape& s, bool reverse, const ForwardArgs<S>& a) {
  validate_shape(s, Cell::name);
  require(a.source && a.recurrentWeight && a.output, Cell::name, "missing buffer");
  require(!a.packed || a.packed->matches(s), Cell::name, "packed weights of another shape");
  require(!Cell::has_cell_state || a.cellOutput, Cell::name, "missing cell buffer");
  require(!a.recurrentProduct || cell.keeps_product(), Cell::name,
          "recurrentProduct: kept by a resetAfter GRU only");
  if (s.T == 0 || s.N == 0) return;  // every output is empty
  FlushDenormals flush;
  const Index TN = s.T * s.N, DGH = s.DGH();

  // SPEC.md section 5: x'[t] = x[t]·Wᵀ + b for every step and both directions at once,
  // one GEMM [T·N, I] x [I, D·G·H] (without W the source already holds x' − b). The bias is
  // added by each step, on rows it reads anyway. When training, x·Wᵀ is written into zState,
  // which has its layout: each step then turns its own rows into the gates in place (no
  // buffer of the projection, and half the memory traffic of the steps).
  const bool into_gates = s.has_input_weight && a.zState;
  Buffer<S> projection(static_cast<size_t>(s.has_input_weight && !into_gates ? TN * DGH : 0));
  S* projection_out = into_gates ? a.zState : projection.data();
  const S* projected = s.has_input_weight ? projection_out : a.source;

  // Rᵀ [H, G·H] packed per direction for the steps' products: earlier (a.packed), or now.
  const ProductPath product = detail::forward_product(s, a.packed != nullptr);
  const bool pack = product == ProductPath::packed && !a.packed;
  const bool kept = product == ProductPath::packed && a.packed;
  const Index steps_before =
      kept ? a.packed->steps_swept.fetch_add(s.T, std::memory_order_relaxed) : 0;
  std::vector<PackedPanels<S>> weights_t(static_cast<size_t>(pack ? s.D() : 0));
  std::vector<Direction<S>> dirs;
  for (int d = 0; d < s.D(); ++d) {
    dirs.push_back(
        make_direction(s, reverse, d, a.recurrentWeight, a.peephole, a.secondaryBias, a.mask));
    // Without panels, the kernel of the whole step's product, for every share of it.
    dirs.back().product = product != ProductPath::automatic
                              ? product
                              : gemm_kernel(Trans::no, Trans::yes, s.N, s.GH(), s.H, true);
    if (kept) {
      dirs.back().weight_t_panels = &a.packed->recurrent_t[static_cast<size_t>(d)];
      dirs.back().steps_before = steps_before;
    } else if (pack) {
      auto& wt = weights_t[static_cast<size_t>(d)];
      const profile::Scope timed(profile::Section::packing);
      pack_panels(dirs.back().recurrentWeight, 1, s.H, s.H, s.gates, s.H, wt);
      dirs.back().weight_t_panels = &wt;
    }
  }
  const auto split =
      detail::split_work(s, cell.recurrent_gates(), sizeof(S), cell.uses_dependent_product());
  // A team by units (one row, or one step of a few) may compute the projection in its first
  // step (team_loops.hpp).
  const auto steps = detail::team_steps(cell, s, a, split, dirs[0], projection_out);
  if (s.has_input_weight && !steps.weights) {
    const profile::Scope timed(profile::Section::projection);
    detail::project_inputs(s, a, projection_out);
  }
  std::vector<detail::ForwardSequences<S>> seqs;
  for (int d = 0; d < s.D(); ++d)
    seqs.push_back(detail::forward_sequences<Cell>(s, a, d, projected));
  const profile::Scope timed(profile::Section::forward_loops);
  if (split.path == SplitPath::team) {
    for (int d = 0; d < s.D(); ++d) {
      const auto i = static_cast<size_t>(d);
      detail::forward_team(cell, s, a, dirs[i], seqs[i], split.team, steps);
    }
    return;
  }
  const auto parts = static_cast<Index>(split.parts.size());
  parallel_for(
      parts,
      [&](Index i) {
        const auto& part = split.parts[static_cast<size_t>(i)];
        const auto d = static_cast<size_t>(part.d);
        detail::forward_rows(cell, s, a, dirs[d], part, seqs[d]);
      },
      split.parallel);
}

template <class Cell, class S>
void recurrent_gradients(const Cell& cell, const RNNShape& s, bool reverse,
                         const GradientArgs<S>& a) {
  validate_shape(s, Cell::name);
  require(a.source && a.recurrentWeight && a.sourceGradient && a.zState && a.sourceGrad &&
              a.recurrentWeightGrad,
          Cell::name, "missing buffer");
  // The gradient op's own inputs: its checks name it "<cell>Gradients" (made once per cell).
  static const std::string op = std::string(Cell::name) + "Gradients";
  require(Cell::saved != SavedSequence::outputFwd || a.outputFwd, op.c_str(),
          "outputFwd is required");
  require(Cell::saved != SavedSequence::cellOutputFwd || a.cellOutputFwd, op.c_str(),
          "cellOutputFwd is required");
  require(!a.recurrentProduct || cell.keeps_product(), op.c_str(),
          "recurrentProduct: kept by a resetAfter GRU only");
  if (s.T == 0 || s.N == 0) return detail::stepless_gradients(s, a);  // no time loop over nothing
  FlushDenormals flush;
  const Index TN = s.T * s.N, I = s.I, H = s.H, GH = s.GH(), DGH = s.DGH();
  const Index RGH = cell.recurrent_gates() * H;

  // dL/dx' for every step and both directions, [T·N, D·G·H]. Without W the source is x'
  // itself and this is its gradient (SPEC.md section 6), so it is written there directly.
  Buffer<S> dxp_buffer(static_cast<size_t>(s.has_input_weight ? TN * DGH : 0));
  S* dxp_all = s.has_input_weight ? dxp_buffer.data() : a.sourceGrad;
  Buffer<S> dq_buffer(static_cast<size_t>(Cell::separate_recurrent_gradient ? TN * DGH : 0));
  S* dq_all = Cell::separate_recurrent_gradient ? dq_buffer.data() : dxp_all;

  // Per direction, for all rows: the sequences the loop reads.
  const auto D = static_cast<size_t>(s.D());
  std::vector<Direction<S>> dirs;
  std::vector<CellBackwardState<S>> states(D);
  std::vector<Buffer<S>> hp_all(D), hm_all(D);
  // R [G·H, H] packed once per call, per direction, for the steps' products dQ·R.
  std::vector<PackedPanels<S>> weights(D);
  for (int d = 0; d < s.D(); ++d) {
    dirs.push_back(
        make_direction(s, reverse, d, a.recurrentWeight, a.peephole, a.secondaryBias, a.mask));
    {
      const profile::Scope timed(profile::Section::packing);
      pack_panels(dirs.back().recurrentWeight, H, 1, GH, 1, H, weights[static_cast<size_t>(d)]);
    }
    dirs.back().weight_panels = &weights[static_cast<size_t>(d)];
    const profile::Scope timed(profile::Section::backward_prepare);
    detail::prepare_direction(cell, s, a, dirs.back(), dxp_all, dq_all, states[d], hp_all[d],
                              hm_all[d]);
  }

  const auto split =
      detail::split_work(s, cell.recurrent_gates(), sizeof(S), cell.uses_dependent_product());
  {
    const profile::Scope timed(profile::Section::backward_loops);
    if (split.path == SplitPath::team) {
      for (size_t d = 0; d < D; ++d)
        detail::backward_team(cell, s, a, dirs[d], states[d], split.team);
    } else {
      const auto parts = static_cast<Index>(split.parts.size());
      parallel_for(
          parts,
          [&](Index i) {
            const auto& part = split.parts[static_cast<size_t>(i)];
            detail::backward_rows(cell, s, a, dirs[static_cast<size_t>(part.d)], part,
                                  states[static_cast<size_t>(part.d)]);
          },
          split.parallel);
    }
  }
  // Weight gradients after the loops, one GEMM each over all T·N rows, all of them (and
  // dL/dx) in one parallel job: none reads another's result (gemm_group).
  const profile::Scope weights_timed(profile::Section::weight_gradients);
  std::vector<GemmProduct<S>> products;
  for (int d = 0; d < s.D(); ++d) {  // dR = Σ_t dQ_tᵀ·hm_t
    const auto& state = states[static_cast<size_t>(d)];
    products.push_back({Trans::yes, Trans::no, RGH, H, TN, S(1), state.dq_all, DGH,
                        state.views.hm.base, H, S(0), a.recurrentWeightGrad + d * GH * H, H});
  }
  if (s.has_input_weight) {
    if (a.inputWeightGrad) {  // dW = Σ_t dx'_tᵀ·x_t
      products.push_back({Trans::yes, Trans::no, DGH, I, TN, S(1), dxp_all, DGH, a.source, I, S(0),
                          a.inputWeightGrad, I});
    }
    products.push_back({Trans::no, Trans::no, TN, I, DGH, S(1), dxp_all, DGH, a.inputWeight, I,
                        S(0), a.sourceGrad, I});  // dL/dx = dx'·W
  }
  gemm_group(products);
  for (int d = 0; d < s.D(); ++d)
    cell.finish_backward(dirs[static_cast<size_t>(d)], a, states[static_cast<size_t>(d)]);
  if (a.biasGrad) detail::column_sums(dxp_all, TN, DGH, DGH, a.biasGrad);
}

}  // namespace rnngraph

// A cell's four public entry points (rnngraph/<cell>.hpp): prefix##_forward and
// prefix##_gradients for float and double, each running the driver with Cell<S>(options).
#define RNNGRAPH_CELL_ENTRY_POINTS(prefix, Options, Cell)                                      \
  template <class S>                                                                           \
  void prefix##_forward(const Options& o, const RNNShape& shape, const ForwardArgs<S>& a) {    \
    recurrent_forward(Cell<S>(o), shape, o.reverse, a);                                        \
  }                                                                                            \
  template <class S>                                                                           \
  void prefix##_gradients(const Options& o, const RNNShape& shape, const GradientArgs<S>& a) { \
    recurrent_gradients(Cell<S>(o), shape, o.reverse, a);                                      \
  }                                                                                            \
  template void prefix##_forward<float>(const Options&, const RNNShape&,                       \
                                        const ForwardArgs<float>&);                            \
  template void prefix##_forward<double>(const Options&, const RNNShape&,                      \
                                         const ForwardArgs<double>&);                          \
  template void prefix##_gradients<float>(const Options&, const RNNShape&,                     \
                                          const GradientArgs<float>&);                         \
  template void prefix##_gradients<double>(const Options&, const RNNShape&,                    \
                                           const GradientArgs<double>&);
