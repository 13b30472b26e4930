// A weight matrix packed once per call for the products of the time loop: few rows of A
// (the batch) against the same B [k, n] at every step.
//
// B's columns are cut into panels of a few vectors' width, and each panel is stored as
// its k rows one after another, so a product streams every panel front to back (a plain
// row-major B would have the kernel jump a whole row of B, often a page, per k). The
// columns form `groups` equal blocks (the gates of R); each block is padded to whole panels,
// so a gate starts at a panel and a product can take any run of gates.
#pragma once

#include <algorithm>

#include "rnngraph/problem.hpp"
#include "workspace.hpp"

namespace rnngraph {

template <class S>
struct PackedPanels {
  Buffer<S> data;
  Index k = 0;           // rows of B
  Index groups = 0;      // column blocks (gates)
  Index group_cols = 0;  // columns per block
  Index per_group = 0;   // panels per block
  Index width = 0;       // columns per panel

  Index panels() const { return groups * per_group; }
  const S* panel(Index i) const { return data.data() + i * k * width; }
  // The first column of B that panel i holds, and how many of its columns are real.
  Index first_column(Index i) const {
    return (i / per_group) * group_cols + (i % per_group) * width;
  }
  Index columns(Index i) const { return std::min(width, group_cols - (i % per_group) * width); }
};

// Pack B [k, groups·group_cols] with B[p, j] = src[p·p_stride + j·j_stride] (p_stride = 1,
// j_stride = H packs Rᵀ from R [G·H, H]; p_stride = H, j_stride = 1 packs R itself).
// Uses rnngraph's threads for large matrices.
template <class S>
void pack_panels(const S* src, Index p_stride, Index j_stride, Index k, Index groups,
                 Index group_cols, PackedPanels<S>& out);

// C = beta·C + A[m, kc]·B[k0 : k0 + kc, columns of panels first .. last-1]. c points at the first
// column of panel `first`; C's columns are B's (with ldc), padding columns never stored.
// `descending`: the panels are swept from the last to the first. The time loops alternate the two
// ways step by step (driver/step_runner.hpp, step_direction), so that a step starts on the panels
// the step before read last, still in the core's cache when its share of B is larger than the
// cache. Every element of C is summed the same way either way.
template <class S>
void packed_gemm(Index m, Index k0, Index kc, const S* a, Index lda, const PackedPanels<S>& b,
                 Index first, Index last, S beta, S* c, Index ldc, bool descending = false);

// The same product over the panels [first, last) of each of the first `groups` groups (the
// same units of each gate), in one sweep: its register tiles may take panels of two gates, so
// a few panels per gate still fill them (a team's items by units, driver/team_loops.hpp). c
// points at B's column 0; `descending` sweeps from the last group's last panel. Every element
// of C is summed as packed_gemm sums it.
template <class S>
void packed_gemm_units(Index m, Index k0, Index kc, const S* a, Index lda, const PackedPanels<S>& b,
                       Index groups, Index first, Index last, S beta, S* c, Index ldc,
                       bool descending = false);
}  // namespace rnngraph
