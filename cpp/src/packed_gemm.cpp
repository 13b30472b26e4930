#include "packed_gemm.hpp"

#include "parallel.hpp"
#include "rnngraph/forced_paths.hpp"
#include "simd.hpp"
#include "thread_scratch.hpp"
#include "tuning.hpp"

#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

namespace rnngraph {
namespace {

using simd::load;
using simd::store_value;
using simd::Vec;
using simd::with_rows;

// Register tile: MR rows of A against NP panels of NV vectors each. Panels of two vectors
// (128 bytes a row with AVX-512) measured faster than three, even where three pad less.
constexpr int kPanelVectors = 2;  // the widest panel, in vectors
// MR for three or more rows: 24 accumulators of AVX-512's 32 registers, 12 of AVX2's 16.
template <int NV>
constexpr int kTileRows = simd::kWide ? (NV == 2 ? 12 : 16) : (NV == 2 ? 6 : 12);
// The three tile regimes (tuning.hpp): few rows (NP = 3, then NP = 2 for two panels left
// over), some rows (NP = 2, AVX-512 only), many rows (NP = 1 with prefetching).
constexpr int kFewRows = tuning::kFewRows;
constexpr int kSomeRows = simd::kWide ? tuning::kSomeRowsWide : kFewRows;

TilePath tile_for(Index m) {
  const TilePath forced = forced_paths().tile;
  if (forced != TilePath::automatic) return forced;
  if (m <= kFewRows) return TilePath::few;
  return m <= kSomeRows ? TilePath::some : TilePath::many;
}

// Vectors per panel for blocks of `cols` columns (tuning.hpp, kPanelPaddingShare): with 16
// vector registers, the widest panel whose padding adds at most a kPanelPaddingShare-th to
// the block's vectors (one-vector panels for blocks of one, three, five or seven vectors);
// with 32, where the one-vector tile holds 16 rows, the widest panel without padding.
template <class S>
Index panel_vectors(Index cols) {
  constexpr Index L = Vec<S>::lanes;
  const Index vectors = (cols + L - 1) / L;
  for (Index nv = kPanelVectors; nv > 1; --nv) {
    const Index padding = (vectors + nv - 1) / nv * nv - vectors;
    if (padding == 0 || (!simd::kWide && padding * tuning::kPanelPaddingShare <= vectors))
      return nv;
  }
  return 1;
}

// Where a tile reads A[r, p]: rows of the caller's A (a[r·lda + p]), or a block that
// pack_rows made (a[p·MR + r]), whose strides are then constants: the broadcasts address
// it with immediate offsets instead of a register per row. (With a stride in a register,
// 12 rows spilled registers inside the loop; constant offsets made row 10's loops 8 % faster
// on 1 thread of an AMD EPYC Zen 4, `benchmarks/profile_rows.py --rows 10,11,8 --threads 1`:
// forward loops 71-73 -> 65-66 ms, backward loops 73-76 -> 68 ms.)
template <int MR, bool Packed>
struct RowsOfA {
  Index lda;
  Index at(int r, Index p) const { return Packed ? p * MR + r : r * lda + p; }
};

// C[MR, NP panels] = beta·C + A[MR, kc]·B_panels[kc, ·], A[r, p] at rows.at(r, p); panel q
// starts at b[q] and holds cols[q] real columns. Every C element is summed over p in order.
// With `ahead` (the next panel, at the same rows; Prefetch only) each step also prefetches
// that panel's row into L2: it then arrives from L3 while this one is computed. (Used for
// the many-row tiles; the one- or two-row products, three or two panels at a time, measured
// slower with it.)
template <class S, int MR, int NP, int NV, bool Packed, bool Prefetch>
void panel_block(Index kc, const S* a, RowsOfA<MR, Packed> rows, const S* const* b,
                 const Index* cols, const Index* c_offset, S beta, S* c, Index ldc,
                 const S* ahead) {
  using V = typename Vec<S>::type;
  constexpr int L = Vec<S>::lanes, W = NV * L;
  V acc[MR][NP * NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NP * NV; ++v) acc[r][v] = V{};
  for (Index p = 0; p < kc; ++p) {
    if constexpr (Prefetch) {
      const char* row = reinterpret_cast<const char*>(ahead + p * W);
      for (int line = 0; line < W * static_cast<int>(sizeof(S)); line += 64)
        __builtin_prefetch(row + line, 0, 2);
    }
    V bv[NP * NV];
    for (int q = 0; q < NP; ++q)
      for (int v = 0; v < NV; ++v) bv[q * NV + v] = load<V>(b[q] + p * W + v * L);
    for (int r = 0; r < MR; ++r) {
      const S av = a[rows.at(r, p)];
      const V avv = simd::broadcast<V>(av);
      for (int v = 0; v < NP * NV; ++v) acc[r][v] = simd::fmadd(avv, bv[v], acc[r][v]);
    }
  }
  for (int q = 0; q < NP; ++q) {
    for (int r = 0; r < MR; ++r) {
      S* out = c + r * ldc + c_offset[q];
      if (cols[q] == W) {
        for (int v = 0; v < NV; ++v) {
          V value = acc[r][q * NV + v];
          if (beta != S(0)) value += beta * load<V>(out + v * L);
          std::memcpy(out + v * L, &value, sizeof(V));
        }
      } else {
        for (Index j = 0; j < cols[q]; ++j) {
          out[j] = store_value(beta, out[j], acc[r][q * NV + j / L][j % L]);
        }
      }
    }
  }
}

// The m rows of A in tiles of at most MR rows. With AVX2 as even as they go: 32 rows with
// MR = 6 as 6, 6, 5, 5, 5, 5 rather than 6, 6, 6, 6, 6, 2, whose last tile of two rows has too
// few accumulators to hide the FMA latency while it streams the panel as a full tile does
// (2-core Zen 3, one thread, H = 512, product alone, GFLOP/s previous / even tiles, best of
// 6 alternating: m = 20 88.9 / 96.0, m = 32 91.7 / 96.2, m = 44 93.0 / 96.3; m = 16 and 64
// equal). With AVX-512 (MR = 12 or 16) full tiles first, then the rest: even tiles measured
// no faster there (16-core Xeon, same product, m = 16-64 within the runs' spread) and whole
// rows at 16 threads 0-7 % slower (row 12: 16.6-17.2 against 15.1-16.2 ms;
// results/machine16-even-tiles-ab-2026-11-24.txt). Tile t covers [start(t), start(t + 1)).
struct RowTiles {
  Index m, tiles, max_rows;
  RowTiles(Index rows, int most) : m(rows), tiles((rows + most - 1) / most), max_rows(most) {}
  Index start(Index t) const { return simd::kWide ? std::min(m, t * max_rows) : m * t / tiles; }
  Index rows(Index t) const { return start(t + 1) - start(t); }
};

// A's rows in blocks of MR, each block p-major (block[p·mr + r]), so a tile's broadcasts
// read one contiguous stream: rows of A a power-of-two apart (H = 512, 1024) would
// otherwise fall into the same L1 set and evict each other. The copy goes to the thread's
// scratch (thread_scratch.hpp), kept from step to step, so the steps of a time loop allocate
// nothing; sweep_panels keeps it within tuning::kCopiedRowsBytes.
template <class S, int MR>
const S* pack_rows(Index m, Index kc, const S* a, Index lda, S* copy) {
  const RowTiles tiles(m, MR);
  for (Index t = 0; t < tiles.tiles; ++t) {
    const Index i0 = tiles.start(t), mr = tiles.rows(t);
    S* __restrict dst = copy + i0 * kc;
    for (Index r = 0; r < mr; ++r) {
      const S* __restrict src = a + (i0 + r) * lda;
      for (Index p = 0; p < kc; ++p) dst[p * mr + r] = src[p];
    }
  }
  return copy;
}

// The panels a product takes, in the order of their positions 0 .. count() - 1: `runs` runs of
// `run` consecutive panels, run r starting at panel start + r·stride. One run is a range of
// panels (packed_gemm); one run per gate is the same units of every gate (packed_gemm_units).
struct PanelRuns {
  Index start, run, runs, stride;
  Index count() const { return run * runs; }
  Index at(Index position) const { return start + position / run * stride + position % run; }
};

// The panels at positions [lo, hi) of `order`, NP at a time (whole groups; c points at B's
// column c0), all rows of A per group of panels (the panels stay in cache while the rows pass
// over them), from the front, or from the back when `descending` (packed_gemm). A group may
// take panels of different runs: each C element is summed over p on its own, whichever panels
// share its tile. Given a `copy` (m·kc elements), A is first packed there by pack_rows.
// Returns the end of the positions it left, fewer than NP: [returned, hi) from the front,
// [lo, returned) from the back.
// Cutting k into L1-sized pieces measured slower; so did slices of 128 or 256 rows of B
// resumed from partial sums, for row 5's input projection on the 2-core Zen 4, while on the
// 16-core Xeon only row 5 on one thread was faster, the other cells within the rounds' spread
// (results/machine16-depth-slices-ab-2026-11-29.txt).
template <class S, int MR, int NP, int NV>
Index panel_sweep(Index m, Index k0, Index kc, const S* a, Index lda, S* copy,
                  const PackedPanels<S>& b, PanelRuns order, Index c0, Index lo, Index hi,
                  bool descending, S beta, S* c, Index ldc) {
  const Index blocks = (hi - lo) / NP;  // of NP panels each
  const bool packed_rows = copy != nullptr;
  if (packed_rows && blocks > 0) a = pack_rows<S, MR>(m, kc, a, lda, copy);
  for (Index block = 0; block < blocks; ++block) {
    const Index i = descending ? hi - (block + 1) * NP : lo + block * NP;
    const S* panels[NP];
    Index cols[NP], offset[NP];
    for (int q = 0; q < NP; ++q) {
      const Index panel = order.at(i + q);
      panels[q] = b.panel(panel) + k0 * b.width;
      cols[q] = b.columns(panel);
      offset[q] = b.first_column(panel) - c0;
    }
    const RowTiles tiles(m, MR);
    for (Index t = 0; t < tiles.tiles; ++t) {
      const Index i0 = tiles.start(t);
      with_rows<MR>(tiles.rows(t), [&](auto mr) {
        constexpr int R = decltype(mr)::value;
        // The panel swept next (NP = 1 only; not past either end of the sweep).
        const S* ahead = NP == 1 && i0 == 0 && block + 1 < blocks
                             ? b.panel(order.at(descending ? i - 1 : i + 1)) + k0 * b.width
                             : nullptr;
        // The two runtime choices as the template's constants.
        auto run = [&](auto packed, auto prefetch) {
          constexpr bool P = decltype(packed)::value;
          panel_block<S, R, NP, NV, P, decltype(prefetch)::value>(kc, a + i0 * (P ? kc : lda),
                                                                  {lda}, panels, cols, offset, beta,
                                                                  c + i0 * ldc, ldc, ahead);
        };
        auto with_prefetch = [&](auto packed) {
          if (ahead) run(packed, std::true_type{});
          else run(packed, std::false_type{});
        };
        if (packed_rows) with_prefetch(std::true_type{});
        else with_prefetch(std::false_type{});
      });
    }
  }
  return descending ? hi - blocks * NP : lo + blocks * NP;
}

// C = beta·C + A[m, kc]·B[k0 : k0 + kc, ·] over the panels of `order` (packed_gemm,
// packed_gemm_units): each panel's columns of C at c + first_column - c0.
template <class S>
void sweep_panels(Index m, Index k0, Index kc, const S* a, Index lda, const PackedPanels<S>& b,
                  PanelRuns order, Index c0, S beta, S* c, Index ldc, bool descending) {
  const Index count = order.count();
  if (m <= 0 || count <= 0) return;
  // A's rows are copied into the tile's layout (pack_rows) when the copy serves enough panels
  // (tuning.hpp, kCopyRowsMinPanels), counted per run: a team's item, a few panels of each
  // gate, reads them in place, as it did when each gate's run was a product of its own.
  const bool copy_rows = order.run >= tuning::kCopyRowsMinPanels;
  // The thread's scratch for the copy, leased once per sweep here. A lease inside panel_sweep
  // made rows 8, 10 and 13 at 16 threads 24-51 % slower on the 16-core Xeon (medians of 3
  // rounds, each build alone, alternating; results/machine16-scratch-lease-ab-2026-11-30.txt);
  // here they are within the rounds' spread of the build before the scratch.
  std::optional<ScratchLease> lease;
  if (copy_rows && m > kFewRows) {
    // More rows than the copy may hold: chunks of rows that fit, as even as they go. Each C
    // element's sum over p is the same whichever rows share its sweep.
    const Index most = static_cast<Index>(tuning::kCopiedRowsBytes / sizeof(S));
    const Index fit = kc > 0 ? std::max<Index>(1, most / kc) : m;
    if (m > fit) {
      const Index chunks = (m + fit - 1) / fit, rows = (m + chunks - 1) / chunks;
      for (Index r0 = 0; r0 < m; r0 += rows)
        sweep_panels(std::min(rows, m - r0), k0, kc, a + r0 * lda, lda, b, order, c0, beta,
                     c + r0 * ldc, ldc, descending);
      return;
    }
    lease.emplace(static_cast<std::size_t>(m * kc) * sizeof(S));
  }
  S* const copy = lease ? static_cast<S*>(lease->data()) : nullptr;
  auto sweep = [&](auto nv) {
    constexpr int NV = decltype(nv)::value;
    Index lo = 0, hi = count;  // the positions not swept yet
    // What a wider tile leaves, it leaves at the end it sweeps towards.
    auto left = [&](Index end) { (descending ? hi : lo) = end; };
    const TilePath tile = tile_for(m);
    if (tile == TilePath::few) {
      // One or two rows: three panels at once give enough independent accumulators to hide
      // the FMA latency of this bandwidth-bound product, and two panels left over still
      // twice as many as one (a team's items leave them: tuning.hpp, kTeamRunPanels).
      left(panel_sweep<S, kFewRows, 3, NV>(m, k0, kc, a, lda, nullptr, b, order, c0, lo, hi,
                                           descending, beta, c, ldc));
      left(panel_sweep<S, kFewRows, 2, NV>(m, k0, kc, a, lda, nullptr, b, order, c0, lo, hi,
                                           descending, beta, c, ldc));
    } else if (tile == TilePath::some) {
      left(panel_sweep<S, kSomeRows, 2, NV>(m, k0, kc, a, lda, copy, b, order, c0, lo, hi,
                                            descending, beta, c, ldc));
    }
    // The many-row tile, and the panels left over by a wider tile.
    panel_sweep<S, kTileRows<NV>, 1, NV>(m, k0, kc, a, lda, m > kFewRows ? copy : nullptr, b, order,
                                         c0, lo, hi, descending, beta, c, ldc);
  };
  simd::with_rows<kPanelVectors>(b.width / Vec<S>::lanes, sweep);
}

// dst[p·W + j] = src[p·p_stride + j·j_stride] for p in [p0, p1), j in [j0, j1).
template <class S>
void pack_elements(const S* __restrict src, Index p_stride, Index j_stride, Index p0, Index p1,
                   Index j0, Index j1, Index W, S* __restrict dst) {
  // Along p in runs of 16, so the panel rows being written stay in L1.
  constexpr Index kTile = 16;
  for (Index q0 = p0; q0 < p1; q0 += kTile) {
    const Index qn = std::min(kTile, p1 - q0);
    for (Index j = j0; j < j1; ++j) {
      const S* col = src + j * j_stride + q0 * p_stride;
      S* out = dst + q0 * W + j;
      for (Index q = 0; q < qn; ++q) out[q * W] = col[q * p_stride];
    }
  }
}

// One panel: dst[p·W + j] = src[p·p_stride + j·j_stride] for j < cols, zero for the padding.
template <class S>
void pack_panel(const S* __restrict src, Index p_stride, Index j_stride, Index k, Index cols,
                Index W, S* __restrict dst) {
  if (j_stride == 1) {  // each row of the panel is a contiguous run of src
    for (Index p = 0; p < k; ++p) {
      const S* row = src + p * p_stride;
      S* out = dst + p * W;
      for (Index j = 0; j < cols; ++j) out[j] = row[j];
      for (Index j = cols; j < W; ++j) out[j] = S(0);
    }
    return;
  }
  // A transpose. Where each column is a contiguous run along p, in L × L blocks through the
  // vector registers; the edges (k or cols not a multiple of L), and other strides, element
  // by element.
  constexpr Index L = simd::Vec<S>::lanes;
  const Index k_blocks = p_stride == 1 ? k / L * L : 0, col_blocks = cols / L * L;
  for (Index p0 = 0; p0 < k_blocks; p0 += L) {
    for (Index j0 = 0; j0 < col_blocks; j0 += L)
      simd::transpose_block(src + j0 * j_stride + p0, j_stride, dst + p0 * W + j0, W);
  }
  pack_elements(src, p_stride, j_stride, 0, k_blocks, col_blocks, cols, W, dst);
  pack_elements(src, p_stride, j_stride, k_blocks, k, 0, cols, W, dst);
  for (Index p = 0; p < k; ++p)
    for (Index j = cols; j < W; ++j) dst[p * W + j] = S(0);
}

}  // namespace

template <class S>
void pack_panels(const S* src, Index p_stride, Index j_stride, Index k, Index groups,
                 Index group_cols, PackedPanels<S>& out) {
  const Index W = panel_vectors<S>(group_cols) * Vec<S>::lanes;
  out.k = k;
  out.groups = groups;
  out.group_cols = group_cols;
  out.per_group = (group_cols + W - 1) / W;
  out.width = W;
  out.data.resize(static_cast<size_t>(out.panels() * k * W));
  S* base = out.data.data();
  auto pack = [&](Index i) {
    pack_panel(src + out.first_column(i) * j_stride, p_stride, j_stride, k, out.columns(i), W,
               base + i * k * W);
  };
  const Index panels = out.panels();
  const Index blocks = parallel_blocks(panels * k * W, tuning::ParallelSite::pack, panels);
  parallel_for(blocks, [&](Index b) {
    for (Index i = panels * b / blocks; i < panels * (b + 1) / blocks; ++i) pack(i);
  });
}

template <class S>
void packed_gemm(Index m, Index k0, Index kc, const S* a, Index lda, const PackedPanels<S>& b,
                 Index first, Index last, S beta, S* c, Index ldc, bool descending) {
  sweep_panels(m, k0, kc, a, lda, b, PanelRuns{first, last - first, 1, 0}, b.first_column(first),
               beta, c, ldc, descending);
}

template <class S>
void packed_gemm_units(Index m, Index k0, Index kc, const S* a, Index lda, const PackedPanels<S>& b,
                       Index groups, Index first, Index last, S beta, S* c, Index ldc,
                       bool descending) {
  sweep_panels(m, k0, kc, a, lda, b, PanelRuns{first, last - first, groups, b.per_group}, 0, beta,
               c, ldc, descending);
}

template void pack_panels<float>(const float*, Index, Index, Index, Index, Index,
                                 PackedPanels<float>&);
template void pack_panels<double>(const double*, Index, Index, Index, Index, Index,
                                  PackedPanels<double>&);
template void packed_gemm<float>(Index, Index, Index, const float*, Index,
                                 const PackedPanels<float>&, Index, Index, float, float*, Index,
                                 bool);
template void packed_gemm<double>(Index, Index, Index, const double*, Index,
                                  const PackedPanels<double>&, Index, Index, double, double*, Index,
                                  bool);
template void packed_gemm_units<float>(Index, Index, Index, const float*, Index,
                                       const PackedPanels<float>&, Index, Index, Index, float,
                                       float*, Index, bool);
template void packed_gemm_units<double>(Index, Index, Index, const double*, Index,
                                        const PackedPanels<double>&, Index, Index, Index, double,
                                        double*, Index, bool);

}  // namespace rnngraph
