// Products large enough to share among threads (gemm, gemm_group): how a product is cut
// into tasks, from its shape alone, and how a group of products runs as one parallel job.
// The kernels each task runs are in gemm.cpp.
#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "gemm.hpp"
#include "parallel.hpp"
#include "rnngraph/threads.hpp"
#include "tuning.hpp"
#include "workspace.hpp"

namespace rnngraph {

namespace {

// How a large product is cut into tasks: a grid of row_blocks × column_blocks blocks of C,
// each summed over `parts` slices of k. It depends on the shape alone (tuning.hpp, kGemm*):
// each element of C is then summed the same way however many threads share the product.
struct ProductCut {
  Index row_blocks = 1, column_blocks = 1, parts = 1;
  Index blocks() const { return row_blocks * column_blocks; }
  // Where block row rb (0 .. row_blocks) of m rows, and block column cb of n, begin.
  Index row_edge(Index m, Index rb) const { return m * rb / row_blocks; }
  Index column_edge(Index n, Index cb) const { return n * cb / column_blocks; }
};

// Where op(A)[r0:, k0:] and op(B)[k0:, c0:] begin: the operands of C's block at (r0, c0)
// summed from depth k0.
template <class S>
std::pair<const S*, const S*> block_operands(Trans ta, Trans tb, const S* a, Index lda, const S* b,
                                             Index ldb, Index r0, Index c0, Index k0) {
  return {ta == Trans::no ? a + r0 * lda + k0 : a + k0 * lda + r0,
          tb == Trans::no ? b + k0 * ldb + c0 : b + c0 * ldb + k0};
}

// Halves the longer side of the blocks (the other when the longer one cannot) while both
// halves keep at least `min_side` and the blocks number fewer than `max_blocks`. Every
// count is a power of two, so 1, 2, 4, 8 and 16 threads get whole shares of the tasks.
void halve_blocks(ProductCut& cut, Index m, Index n, Index min_side, Index max_blocks) {
  while (cut.blocks() < max_blocks) {
    const Index rows = m / cut.row_blocks, cols = n / cut.column_blocks;
    const bool rows_first = rows >= cols;
    if ((rows_first ? rows : cols) / 2 >= min_side) {
      (rows_first ? cut.row_blocks : cut.column_blocks) *= 2;
    } else if ((rows_first ? cols : rows) / 2 >= min_side) {
      (rows_first ? cut.column_blocks : cut.row_blocks) *= 2;
    } else {
      return;
    }
  }
}

static_assert((tuning::kGemmTasks & (tuning::kGemmTasks - 1)) == 0,
              "equal shares for 1, 2, 4, ... threads need a power of two");

ProductCut cut_product(Index m, Index n, Index k) {
  ProductCut cut;
  if (m * n * k < tuning::parallel_threshold(tuning::ParallelSite::gemm)) return cut;
  halve_blocks(cut, m, n, tuning::kGemmBlock, tuning::kGemmTasks);
  // Still too few blocks of C for the threads: the depth k is cut (split-k), which keeps the
  // blocks' arithmetic intensity, and only then the blocks' sides below kGemmBlock.
  while (cut.blocks() * cut.parts < tuning::kGemmTasks && k / (2 * cut.parts) >= tuning::kGemmDepth)
    cut.parts *= 2;
  halve_blocks(cut, m, n, tuning::kGemmMinBlock, tuning::kGemmTasks / cut.parts);
  return cut;
}

// sgemm on OpenBLAS's SkylakeX kernels (SkylakeX, Cooperlake, SapphireRapids: one family of
// kernels) sums each element of a block as it does in any rectangle holding it: 0 of 55
// random shapes and cuts differed (m, n 128-1500, k 8-1500, 1-4 x 1-4 blocks, every
// transpose), with blocks of 2^20 multiply-adds or more, which its small-matrix and direct
// kernels (products of a few thousand) never take. Its dgemm does not (52 of 55 differed),
// and other cores were not measured: there the blocks stay separate calls.
template <class S>
bool merge_blocks() {
  if constexpr (!std::is_same_v<S, float>) {
    return false;
  } else {
    static const bool skylake_family = [] {
      const std::string core = blas_info().core;
      return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
    }();
    return skylake_family;
  }
}

// The blocks [first, last) of `cut` (row-major over the grid), summed over the slice [k0,
// k0 + kc) of k with `kernel`: one call per block, or (merge) as few calls as rectangles of
// whole blocks cover them: a partial row of blocks, whole rows, a partial row. One call
// repacks each operand once where per-block calls repack them for every block. Merged only
// where each element of C is measured to be the same sum whatever rectangle holds it
// (merge_blocks): float, on OpenBLAS's SkylakeX-family cores, blocks of kBlasMergeMin
// multiply-adds or more.
// (1 thread, 2-core machine, rnngraph's OpenBLAS, GFLOP/s as one call / as 256 x 256 blocks:
// row 8's projection 182 / 156, its dR 192 / 167, its dx 190 / 172; 2048³ 220 / 193.)
template <class S>
void block_calls(const ProductCut& cut, Index first, Index last, bool merge, ProductPath kernel,
                 Trans ta, Trans tb, Index m, Index n, Index k0, Index kc, S alpha, const S* a,
                 Index lda, const S* b, Index ldb, S beta, S* c, Index ldc) {
  const Index columns = cut.column_blocks;
  while (first < last) {
    const Index rb = first / columns, cb = first % columns;
    Index rb_end = rb + 1, cb_end = cb + 1;
    if (merge) {
      cb_end = std::min(columns, cb + (last - first));
      if (cb == 0 && last - first >= columns) {
        rb_end = rb + (last - first) / columns;
        cb_end = columns;
      }
    }
    const Index r0 = cut.row_edge(m, rb), r1 = cut.row_edge(m, rb_end);
    const Index c0 = cut.column_edge(n, cb), c1 = cut.column_edge(n, cb_end);
    const auto [ab, bb] = block_operands(ta, tb, a, lda, b, ldb, r0, c0, k0);
    gemm_with(kernel, ta, tb, r1 - r0, c1 - c0, kc, alpha, ab, lda, bb, ldb, beta,
              c + r0 * ldc + c0, ldc);
    first += (rb_end - rb) * columns - cb - (columns - cb_end);
  }
}

// A product of a group as gemm_group runs it: its kernel, its cut (the same as alone), and
// where its items sit among the group's in each phase (0: its tasks, 1: its split-k sums).
template <class S>
struct PlannedProduct {
  GemmProduct<S> p;
  ProductPath kernel = ProductPath::blas;
  ProductCut cut;
  bool merged = false;  // adjacent blocks as one BLAS call (block_calls)
  Index items[2] = {};  // tasks (blocks, or blocks × parts of k); row blocks of the sums
  Index first[2] = {};  // the first of them among the group's items of that phase
  Buffer<S> partials;   // parts 1.. of every block, [parts - 1][m, n]
};

template <class S>
PlannedProduct<S> plan(const GemmProduct<S>& p) {
  PlannedProduct<S> planned;
  planned.p = p;
  planned.kernel = gemm_kernel(p.ta, p.tb, p.m, p.n, p.k, p.alpha == S(1));
  planned.cut = cut_product(p.m, p.n, p.k);
  const ProductCut& cut = planned.cut;
  const Index task_work = (p.m / cut.row_blocks) * (p.n / cut.column_blocks) * (p.k / cut.parts);
  planned.merged = planned.kernel == ProductPath::blas && task_work >= tuning::kBlasMergeMin &&
                   merge_blocks<S>();
  planned.items[0] = cut.blocks() * cut.parts;
  if (cut.parts > 1) {
    planned.partials.resize(static_cast<size_t>((cut.parts - 1) * p.m * p.n));
    planned.items[1] = parallel_blocks(p.m * p.n * cut.parts, tuning::ParallelSite::pass, p.m);
  }
  return planned;
}

// The tasks [first, last) of one product: blocks of C, each over one part of k, part by
// part (task j·blocks + b is block b over part j), so that a thread's run of tasks holds
// whole rows of blocks of one part: one BLAS call when merged. Part 0 goes into C, part
// j > 0 into partials (added to C afterwards, see add_parts).
// (Merged per part against a call per task, 1 thread, 2-core machine, the BLAS alone, ms:
// row 12's dR [1500 x 500, k 1120 in 4 parts] 7.48 / 8.08, row 10's 28.2 / 29.0, row 7's
// 5.70 / 6.12, row 11's 6.07 / 6.48; the whole product in one call 6.97, 27.7, 5.90, 6.20.
// Whole train steps, 1 and 2 threads: rows 12 and 15 0.6-2.3 % faster, rows 7, 10, 11
// within ±1.5 %, the rounds' spread; 4 to 16 threads on the 16-core machine within its
// ±10 % (results/gemm-split-k-merge-ab-2026-11-25.txt).)
template <class S>
void run_tasks(PlannedProduct<S>& planned, Index first, Index last) {
  const GemmProduct<S>& p = planned.p;
  const ProductCut& cut = planned.cut;
  const Index blocks = cut.blocks();
  while (first < last) {
    const Index j = first / blocks, end = std::min(last, (j + 1) * blocks);
    const Index k0 = p.k * j / cut.parts, kc = p.k * (j + 1) / cut.parts - k0;
    S* cj = j == 0 ? p.c : planned.partials.data() + (j - 1) * p.m * p.n;
    const Index ldcj = j == 0 ? p.ldc : p.n;
    const S beta = j == 0 ? p.beta : S(0);
    block_calls(cut, first - j * blocks, end - j * blocks, planned.merged, planned.kernel, p.ta,
                p.tb, p.m, p.n, k0, kc, p.alpha, p.a, p.lda, p.b, p.ldb, beta, cj, ldcj);
    first = end;
  }
}

// Row block r of the sums: C += part 1, then part 2, ... (a fixed order: the sums do not
// depend on the threads).
template <class S>
void add_parts(const PlannedProduct<S>& planned, Index r) {
  const GemmProduct<S>& p = planned.p;
  const Index blocks = planned.items[1];
  const Index r0 = p.m * r / blocks, rows = p.m * (r + 1) / blocks - r0;
  for (Index j = 1; j < planned.cut.parts; ++j)
    block(p.c + r0 * p.ldc, rows, p.n, p.ldc) +=
        cblock(planned.partials.data() + (j - 1) * p.m * p.n + r0 * p.n, rows, p.n, p.n);
}

// The group's items [first, last) of `phase`, product by product: its own tasks (phase 0) or
// row blocks of its sums (phase 1) where they overlap that range.
template <class S>
void run_items(std::vector<PlannedProduct<S>>& planned, Index phase, Index first, Index last) {
  for (PlannedProduct<S>& q : planned) {
    const Index begin = q.first[phase], lo = std::max(first, begin) - begin;
    const Index hi = std::min(last, begin + q.items[phase]) - begin;
    if (lo >= hi) continue;
    if (phase == 0) {
      run_tasks(q, lo, hi);
    } else {
      for (Index r = lo; r < hi; ++r) add_parts(q, r);
    }
  }
}

}  // namespace

template <class S>
void gemm_group(const std::vector<GemmProduct<S>>& products) {
  std::vector<PlannedProduct<S>> planned;
  planned.reserve(products.size());
  Index total[2] = {}, work = 0;  // the group's items in each phase
  for (const GemmProduct<S>& p : products) {
    if (empty_product(p.m, p.n, p.k, p.beta, p.c, p.ldc)) continue;
    planned.push_back(plan(p));
    for (int phase = 0; phase < 2; ++phase) {
      planned.back().first[phase] = total[phase];
      total[phase] += planned.back().items[phase];
    }
    work += p.m * p.n * p.k;
  }
  // One job for the whole group: every product's tasks, then their split-k sums. A thread
  // that the OS slows delays only the group's last tasks, not the end of every product.
  const bool parallel =
      total[0] > 1 && (total[0] > Index(planned.size()) ||
                       work >= tuning::parallel_threshold(tuning::ParallelSite::gemm));
  // No more threads than the larger phase has items (a product cut into 4 blocks on 16 threads
  // wakes 3 workers, as a parallel_for of 4 blocks would).
  const Index team =
      parallel ? std::min<Index>(get_num_threads(), std::max(total[0], total[1])) : 1;
  parallel_phases(
      static_cast<int>(team), total[1] > 0 ? 2 : 1, [&](Index phase) { return total[phase]; },
      [&](Index phase, Index first, Index last, int) { run_items(planned, phase, first, last); });
}

template <class S>
void gemm(Trans ta, Trans tb, Index m, Index n, Index k, S alpha, const S* a, Index lda, const S* b,
          Index ldb, S beta, S* c, Index ldc) {
  // A product too small to cut runs here, with no job (and nothing allocated).
  const ProductCut cut = cut_product(m, n, k);
  if (cut.blocks() * cut.parts == 1) {
    return gemm_with(gemm_kernel(ta, tb, m, n, k, alpha == S(1)), ta, tb, m, n, k, alpha, a, lda, b,
                     ldb, beta, c, ldc);
  }
  gemm_group<S>({{ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc}});
}

template void gemm<float>(Trans, Trans, Index, Index, Index, float, const float*, Index,
                          const float*, Index, float, float*, Index);
template void gemm<double>(Trans, Trans, Index, Index, Index, double, const double*, Index,
                           const double*, Index, double, double*, Index);
template void gemm_group<float>(const std::vector<GemmProduct<float>>&);
template void gemm_group<double>(const std::vector<GemmProduct<double>>&);

}  // namespace rnngraph
