// The work of a call outside its time loops: the input projection x·Wᵀ of every step, the
// bias, and the column sums that give the bias gradient.
#pragma once

#include "arrays.hpp"
#include "gemm.hpp"
#include "packed_weights.hpp"
#include "parallel.hpp"

namespace rnngraph::detail {

// x' = x·Wᵀ for every step and both directions, [T·N, D·G·H] (bias added by the caller).
template <class S>
void project_inputs(const RNNShape& s, const ForwardArgs<S>& a, S* projected) {
  const Index TN = s.T * s.N, DGH = s.DGH();
  if (!a.packed || TN > tuning::kPackedProjectionRows) {
    gemm(Trans::no, Trans::yes, TN, DGH, s.I, S(1), a.source, s.I, a.inputWeight, s.I, S(0),
         projected, DGH);
    return;
  }
  const PackedPanels<S>& w = a.packed->input_t;
  const Index panels = w.panels();
  const Index blocks = parallel_blocks(TN * DGH * s.I, tuning::ParallelSite::projection, panels);
  parallel_for(blocks, [&](Index b) {
    const Index first = panels * b / blocks, last = panels * (b + 1) / blocks;
    if (last > first) {
      packed_gemm(TN, 0, s.I, a.source, s.I, w, first, last, S(0),
                  projected + w.first_column(first), DGH);
    }
  });
}

// Every row of p [rows, cols] += bias (nothing when bias is absent).
template <class S>
void add_bias_rows(S* p, Index rows, Index cols, const S* bias) {
  if (!bias || rows == 0) return;
  block(p, rows, cols, cols).rowwise() +=
      Eigen::Map<const Eigen::Array<S, 1, Eigen::Dynamic>>(bias, cols);
}

// out[j] = Σ_r p[r, j], rows added in order so the result never depends on alignment.
template <class S>
void column_sums(const S* p, Index rows, Index cols, Index ld, S* out) {
  Eigen::Map<Eigen::Array<S, 1, Eigen::Dynamic>> o(out, cols);
  o.setZero();
  for (Index r = 0; r < rows; ++r) o += cblock(p + r * ld, 1, cols, ld);
}

}  // namespace rnngraph::detail
