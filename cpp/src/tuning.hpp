// Every threshold that picks a path, in one place, each beside the measurement that chose it.
// Tests reach each path regardless of these numbers through the forced paths
// (rnngraph/forced_paths.hpp); benchmarks/thresholds.py re-measures the parallel ones.
//
// Sizes are counted as: "multiply-adds" of a product, "elements" of a memory pass, bytes.
#pragma once

#include <cstddef>

#include "rnngraph/problem.hpp"

namespace rnngraph::tuning {

// ---- Work worth a second thread -------------------------------------------------------
// Below these sizes a piece of work stays on the calling thread: handing it to a worker and
// waiting for it costs more than it saves. The runtime value of each comes from
// parallel_threshold() (below), so benchmarks/thresholds.py can move it and time both sides.
enum class ParallelSite : int {
  recurrence = 0,  // a whole op's time loops, in multiply-adds of all steps (work_split.hpp)
  step,            // ... or of one step, however few the steps
  gemm,            // one product of the BLAS or the small kernel, cut into blocks of C
  projection,      // the input projection through packed weights
  pass,            // a pass over whole sequences, elements (hp, hm, h = act(z), ...)
  pack,            // packing a weight matrix into panels, elements
  team,            // a thread per this many multiply-adds of a step a team shares
  count
};
// Defaults, indexed by ParallelSite. Measured on the 2-core development machine (AMD EPYC,
// 2 threads, `python3 benchmarks/thresholds.py`, results/thresholds-2026-11-22T200141.md):
// each site timed always-parallel against always-serial on a sweep of sizes; "crossover" is
// the smallest size from which the parallel side stays faster (medians). Below it a parallel
// call loses most to waking a sleeping worker (its median, not its min, is 0.1-0.2 ms slower).
constexpr Index kParallelDefaults[] = {
    // recurrence: LSTM T16 N16, row chunks against one thread: crossover 2.36M
    // (H = 48: 1.34x), and 2^21 = 2.10M sits just below it.
    Index(1) << 21,
    // step: LSTM T1 N16: 147K still loses (median 0.13 against 0.03 ms), 262K is 1.20x.
    Index(1) << 18,
    // gemm: a single-gate training step's weight-gradient products: 1.18M is 1.17x faster in
    // parallel (524K: 1.01x, 295K: 0.96x).
    Index(1) << 20,
    // projection: packed constant weights, T·N = 64 rows: crossover 590K (1.05x); 2^19.
    Index(1) << 19,
    // pass: a masked GRU backward's sequence passes: no gain on 2 cores at any size up to
    // 524K elements (0.98-1.01x: bound by memory); kept at 2^18 for machines with more
    // memory bandwidth per core.
    Index(1) << 18,
    // pack: packing R for the forward (LSTM, T·N = 32): crossover 147K (1.20x); 2^18.
    Index(1) << 18,
    // team: a team thread per this many multiply-adds of a step's product (a divisor, not a
    // threshold, which team_size counts as 1 or more; moved by profile_rows.py --threshold,
    // which the 16-core team sweep used, machine16-profile-16threads-team*). A team of 16 on
    // a step of 0.8M (row 2, GRU H = 512, N = 1) ran 0.125 ms against 0.094 ms with 4 threads
    // on the 16-core machine (results/machine16-sweep-2026-11-22T2244.md), each thread's
    // share of a step there being 49K against 197K.
    Index(1) << 17,
};
static_assert(sizeof(kParallelDefaults) / sizeof(Index) == static_cast<int>(ParallelSite::count));

// The threshold in force for `site` (the default unless set_parallel_threshold moved it).
Index parallel_threshold(ParallelSite site);
// For measurements only: move a threshold (a negative value restores the default).
void set_parallel_threshold(ParallelSite site, Index value);

// The path thresholds below were checked with `python3 benchmarks/paths.py` (results/paths-2026-11-22T200624.md),
// which times each forced path per shape: float32 LSTM forward, I = H.

// ---- How a call spends its threads (driver/work_split.hpp) ----------------------------
// Row chunks never have fewer rows than this: a thinner chunk runs its step products on too
// few rows for the register tiles (packed_gemm.cpp), and each chunk streams all of R.
// (2 threads, T = 16: 8 rows cut in two chunks of 4 gain nothing over one thread at H = 512
// (0.99x) and lose at H = 32 and 1024; 16 rows in two chunks of 8 are 1.34-1.59x faster than
// one thread at H = 128 to 1024.)
constexpr Index kMinChunkRows = 8;
// Recurrent weights up to this size (bytes per direction) stream from the shared L3 cache
// fast enough for every thread to read all of them at each step of its own rows. Larger
// ones (against a 32 MiB L3) would be fetched from memory by each thread: then, unless the
// batch is large enough to make each pass over R pay off, the threads share one direction,
// each streaming only its slice of R. (Measured, 2 threads: R of 3 MiB with 32 rows, row
// chunks 1-4 % faster than sharing; 12 and 37 MiB with 16 and 32 rows, 2 % slower.)
constexpr Index kStreamedWeightBytes = Index(8) << 20;
// Threads sharing a step take at least this many hidden units each (one AVX-512 vector of
// floats): a thinner slice of the gate columns leaves a thread less work than the barrier.
// (2 threads, T = 16, N = 2: a team is 1.72x faster than one thread at H = 512, even at
// H = 128 (1.00x) and 1024 (0.99x), and loses at H = 32 (0.78x), where the work split keeps
// the call on one thread anyway.)
constexpr Index kTeamUnitsPerThread = 16;
// ... and at least the "team" site's multiply-adds of each step's product (kParallelDefaults).

// ---- The forward step's product (driver/direction.hpp) --------------------------------
// The forward packs Rᵀ into panels once per call when T·N reaches kPackWeightsRows and the
// batch reaches kPackWeightsBatch or the hidden size is at most kPackWeightsHidden: a batch
// of a few rows streams R's own rows as dot products faster than a copy is made. The
// backward always packs R. (1 thread, T = 32: at H = 32 and 128 the packed product is the
// fastest kernel from N = 1 on (1.6-3.4x over dot products); at H = 512 dot products win
// for N = 1 (T = 4: 1.91x, T = 32: 1.03x), N = 4 at T = 4 (1.37x) and N = 8 at T = 8 (1.01x),
// and packing wins from N = 16 (1.27x); T = 32, N = 4 is the one miss (packed 1.14x).)
constexpr Index kPackWeightsRows = 32;
constexpr Index kPackWeightsBatch = 16;
constexpr Index kPackWeightsHidden = 128;
// Up to this many rows of x, the input projection streams packed weights (a Graph's
// constants) with the panel kernel; more rows go to the BLAS, which blocks x for its caches.
// (Not re-measured here: chosen with the panel kernel's many-row tile, which holds 12-16
// rows of x and streams every panel once per tile, so 256 rows read W 16-21 times.)
constexpr Index kPackedProjectionRows = 256;

// ---- Product kernels (gemm.cpp) -------------------------------------------------------
// Below this many multiply-adds a BLAS call costs more in dispatch than in arithmetic
// (a [1, 32] x [32, 128] step of a tiny LSTM), so the small kernel does the work. Its
// results are summed in a fixed order too. (1 thread, T = 4: every kernel takes 10-16 µs a
// call for H ≤ 16, within 20 % of each other: the call's own overhead.)
constexpr Index kSmallGemm = 32 * 1024;
// A product A·Bᵀ with at most this many rows (and n·k of at least kDotMinSize) goes to the
// dot-product kernel along B's rows: the BLAS would repack all of B for a few rows. (1 thread:
// at H = 512 dot products beat the BLAS 1.7-3.7x for 1 to 8 rows; at H = 32-64 with T = 4 the
// BLAS is 0-27 % faster, 11 µs or less a call.)
constexpr Index kDotRows = 16;
constexpr Index kDotMinSize = 1024;
// A product above the gemm site's threshold is cut into a grid of blocks of C
// (gemm_parallel.cpp, cut_product): a partition that depends on the product's shape alone,
// never on the thread count, because the BLAS picks its kernels by size (a product cut
// differently would be summed differently). Each block repacks its slices of both operands.
// The blocks' sides are halved, the longer first, while they keep at least kGemmBlock, up
// to kGemmTasks blocks; then k is cut (below); then the sides go down to kGemmMinBlock while
// there are still fewer than kGemmTasks tasks. Every count is a power of two, so 1, 2, 4, 8
// and 16 threads get equal shares. Measured against the earlier cut (rows or columns only,
// 21 tasks for row 10's weight gradients, so that 16 threads ran a second round of 5):
//   1 and 2 threads, 2-core machine, rows 7, 8, 10, 12, 13: within the runs' noise (-3 to
//   +4 %; ab runs of ours.make_step, two rounds). Going below 256 before cutting k cost
//   4-10 % at 1 thread (row 7's dR in 128 x 128 blocks instead of 256 x 256 x 4 parts).
//   Re-measured once blocks merged into one BLAS call (a 1-thread product is then a single
//   call, row 12's dR 8.26 -> 7.64 ms alone): whole train steps no faster at 1 thread and
//   2-7 % slower at 2 (rows 10, 11, 12, 15, 16;
//   results/gemm-smaller-blocks-first-ab-2026-11-25.txt).
//   16 threads, 16-core machine (profile_rows.py): row 10's weight gradients 23.2 ms
//   against 24.6, its projection 6.8 against 8.6.
// Up to 32 or 64 blocks of at least 256 (more blocks than threads, for balance) made rows 13
// and 14 slower at 16 threads in three 16-core runs (+4 to +19 %), for gains on rows 10 and 11
// within the noise (results/machine16-gemm-block-tasks-ab-2026-11-25.txt).
constexpr Index kGemmBlock = 256;
constexpr Index kGemmMinBlock = 128;
// Fewer blocks than kGemmTasks (a thin C, a deep k: the weight gradients of a small batch,
// dx = dx'·W) cut k too, into parts at least kGemmDepth deep whose sums are added in a fixed
// order. 16-core machine, 16 threads: row 8's weight gradients took 11.6 ms of 20.2 with
// dx cut into only 2 blocks (machine16-profile-16threads-2026-11-22T2318).
constexpr Index kGemmTasks = 16;
constexpr Index kGemmDepth = 256;
// Adjacent blocks of one part of k that one thread claims together run as one BLAS call
// (gemm_parallel.cpp, block_calls and merge_blocks; with one thread, the whole product,
// or one call per part of a split k) when each block has at least this many multiply-adds
// over its part: OpenBLAS's small-matrix and direct kernels, which sum differently, take only
// products of a few thousand, so a block and the rectangle holding it are summed alike
// (checked bit for bit, tests/test_thread_identity.py).
constexpr Index kBlasMergeMin = Index(1) << 20;

// ---- Packed-panel tiles (packed_gemm.cpp) ---------------------------------------------
// Up to this many rows, tiles of three panels, and of two for two left over (the "few rows"
// regime): enough independent accumulators to hide the FMA latency of this bandwidth-bound product.
// (1 thread, LSTM T = 16, H = 512: 1 row: few 1.03x faster than some, 1.04x than many; 2 rows:
// 1.01x and 1.09x; 3 rows: some 1.13x faster than few.)
constexpr int kFewRows = 2;
// Up to this many rows (AVX-512 only: 24 accumulators), tiles of two panels without
// prefetching (the "some rows" regime). A product of a few rows is bound by the stream of B
// from L3, where the hardware prefetcher alone does better: 4-6 rows measured 1.3-1.5x
// faster this way than in one-panel tiles that prefetch the next panel in a product
// microbenchmark (in a whole LSTM call, H = 512: 1.10-1.15x for 4 and 6 rows); from 8 rows
// on the many-row tile is as fast or faster (8 rows: 1.04x; 12 and 16: within 1 %). A
// software prefetch of each panel's row 16 or 48 ahead in these tiles was no faster on the
// 16-core Xeon (rows 4-6, 1 and 2 threads) and slowed row 4 on both machines
// (results/machine16-far-prefetch-ab-2026-11-29.txt).
constexpr int kSomeRowsWide = 6;
// With AVX2 (16 vector registers), panels are two vectors wide unless that pads a block of
// columns (a gate) by more than 1/kPanelPaddingShare of its vectors; then one vector wide
// (packed_gemm.cpp, panel_vectors). The two-vector tile (6 rows) does twice the multiply-adds
// per load of B of the one-vector tile (12 rows). 2-core AMD Zen 3, one thread, the step
// product Q[m, 4H] = A[m, H]·R^T, GFLOP/s one-vector / two-vector panels (two runs each, same
// padded width): H = 500 m = 64 82.4 / 92.0, m = 16 51-73 / 70-95, m = 4 45-48 / 68-80,
// m = 1-2 22-27 / 29-30; H = 1000 m = 16 74 / 95-96, m = 64 82-84 / 92-95; H = 120 (15
// vectors) m = 16 60-66 / 77-79; H = 40 (5 vectors, a fifth padded) m = 16 35-51 / 63-64,
// m = 64 43-61 / 45-64; H = 24 (3 vectors, a third padded) m = 64 59-61 / 47; H = 8 (one
// vector) 36 / 13. (Before, the panel with the fewest padding columns won: H = 500 and 1000
// in float32 took one-vector panels.)
// With AVX-512 the one-vector tile holds 16 rows against the two-vector tile's 12, and
// one-vector panels stay the choice wherever two would pad at all. 16-core Xeon, one thread,
// same product, GFLOP/s one / two vectors (two runs): float32 H = 144 (9 vectors) m = 16 99 /
// 80-81, m = 64 85-88 / 79-83; H = 240 (15) m = 16 103-107 / 89-92, m = 64 96-100 / 95-98;
// H = 112 (7) m = 16 93-101 / 75-78; H = 1008 (63) m = 16 94-100 / 93-94, m = 64 92-123 /
// 95-145; float64 H = 500 (63) m = 64 40-41 / 48, m = 16 39-40 / 39-42; H = 72 (9) m = 16
// 38-43 / 34-36 (results/machine16-panel-widths-2026-11-24.txt).
constexpr Index kPanelPaddingShare = 8;
// A product over at least this many panels first copies A's rows into the tile's layout
// (packed_gemm.cpp, pack_rows: the broadcasts then read one stream at constant offsets); a product
// over fewer reads them in place, as the copy, one scalar move per element of A, would cost about
// as much as the product itself. A team's items are a few panels each (kTeamRunPanels; a team by
// units counts each gate's run, packed_gemm_units), and so are the threads' blocks of a packed
// input projection on many threads (driver/projection.hpp); a row chunk's or a serial step's
// product takes all of them. 16-core machine, medians of 3 alternating processes, ms, in place /
// copied by each item: 16 threads row 7 13.6 / 20.3, row 8 8.0 / 9.6, row 9 33.5 / 48.3, row 12
// 14.7 / 21.8, row 14 181 / 250; 8 threads row 9 53.7 / 73.6; and in place against a copy made once
// per step by the element-wise items (rows 10, 13: N = 64, 16 threads) 45.0 / 56.5 and 87.5 / 94.8
// (results/machine16-team-operand-ab-2026-11-24.txt); inference, 16 to 4 threads, row 3 (N = 10)
// 0.73 / 1.27, 0.37 / 1.11, 0.68 / 0.82, row 5 (N = 4) 2.44 / 2.60, 3.87 / 6.24, 7.86 / 9.54; row
// 6's projection (187 rows of x) at 16 threads 2.39 / 3.79, at 4 threads 8.45 / 8.92
// (machine16-team-operand-ab, part 3). A row chunk's step (2-core machine, 2 threads) read in
// place: forward loops of rows 7 and 10 7 % slower, others within noise.
constexpr Index kCopyRowsMinPanels = 16;
// The copy lives in the thread's scratch (thread_scratch.hpp: kept from call to call, given
// back once rnngraph is idle), of at most this many bytes: more rows are swept in chunks
// whose copy fits. Every benchmark row's copy fits whole (the largest, row 13's backward
// step at N = 64 over 4H = 4096: 1 MiB in float32).
constexpr std::size_t kCopiedRowsBytes = std::size_t{2} << 20;

// ---- Parallel sections and waiting (parallel.hpp, runtime/) ---------------------------
// A parallel site cuts its work into up to this many blocks per thread: a thread that the OS
// deschedules then holds back at most one block while the others claim the rest.
constexpr Index kBlocksPerThread = 2;
// A team's step product Q = hm·Rᵀ is cut into the same number of runs of units (panels of Rᵀ, or
// columns of an unpacked R) per slot, as equal as whole units allow (team_loops.hpp): runs of about
// kTeamRunPanels panels (the few-row tile takes three panels at a time, the some-row tile two; a
// team by units sweeps its runs of every gate as one sequence, so a tile may span two gates,
// packed_gemm_units) or kTeamRunColumns columns (the runs items had before), and at least
// kTeamItemsPerSlot runs per slot. Runs of exactly six panels left slots unequal shares (11 runs
// over 8 slots: three slots ran two, five ran one) and, with more slots than runs, idle slots.
// 16-core machine, medians of 3 alternating processes per setting, ms, six-panel runs / 1 run per
// slot / 2 runs per slot:
//   row 5 (LSTM T25 N4 H1024): 4 threads 8.54 / 8.17 / 8.12, 8 threads 5.86 / 5.44 / 4.86,
//   16 threads 4.28 / 3.64 / 3.32; row 4 (N1 H512): 8 threads 0.89 / 0.84 / 0.83, 16 threads
//   1.07 / 1.00 / 0.91; row 2 (one step) 0.10-0.13 in all; train rows 8 and 12 at 8 and 16
//   threads within that run's noise (±10 %).
// Fewer, longer runs lose where a worker joins late: row 2 (one step) on 2 threads of the
// 2-core machine, 2 runs per slot 0.121 ms against 0.105 for six-panel runs (6 alternating
// rounds), as the caller can take only whole runs of the late worker's share.
// Tried and not taken: more runs per slot for a call of one step (a team by units; H = 512
// has 16 panels a gate, so 4 runs at 2 threads). 2-core Xeon, 2 threads, medians of 6
// alternating processes, ms, 2 runs per slot against 8: row 2 0.0717 / 0.0624 (every round
// faster), row 3 (the row behind oneDNN) 0.263 / 0.272; against 4: row 2 0.0734 / 0.0704,
// row 3 0.276 / 0.275. Teams of 8 and 16 already have one panel a run there
// (results/single-step-items-ab-xeon-f5f222f-2026-12-03.txt).
constexpr Index kTeamItemsPerSlot = 2;
constexpr Index kTeamRunPanels = 6;
constexpr Index kTeamRunColumns = 16;
// A team whose cell can run its step on any range of hidden units (Cell::column_steps) makes
// each step one phase, items of units computing their product columns then their element-wise
// math (team_loops.hpp), for batches up to this many rows. 16-core machine, medians of 4
// alternating processes, ms, one phase / two phases per step: row 4 (N = 1) 4 threads 0.92 /
// 1.05, 8 threads 0.61 / 0.79, 16 threads 0.72 / 0.80; row 2 (N = 1, one step) within
// 0.01 ms; but row 5 (N = 4, H = 1024) 8 threads 7.4 / 5.7, 16 threads 4.1 / 3.2, its
// runs of panels being four times shorter (one per gate; measured before an item swept its
// runs of every gate as one sequence, packed_gemm_units); rows 8 and 12 (train, N = 16, 32)
// within their noise (benchmarks/results/machine16-unit-steps-ab-2026-11-24.txt). Again after
// that sweep, forced both ways (_force_paths(steps=...)), medians of 3 alternating rounds, ms,
// units / phases: row 5 8 threads 3.49 / 3.19, 16 threads 1.86 / 2.04; row 7 14.3 / 13.3 and
// 12.2 / 11.4; row 12 16.3 / 17.2 and 10.3 / 10.8; row 13 110.9 / 99.6 and 65.0 / 65.2: row 7
// slower by units in every round, row 5 at 16 threads faster, the other cells' rounds overlap
// (results/machine16-steps-ab-2026-11-29.txt).
constexpr Index kTeamUnitStepsMaxRows = 1;
// Such a team computes the input projection in its first step's items, each its own units'
// columns, when the packed weights' projection has at most this many rows (T·N), instead of
// a job of its own before the steps. 16-core machine, medians of 4 alternating processes,
// ms, in the steps / a job before: row 2 (T·N = 1) 4 threads 0.080 / 0.094, 8 threads
// 0.080 / 0.094, 16 threads 0.100 / 0.123; but row 4 (T·N = 25) 2 threads 2.04 / 1.84, 16
// threads 0.61 / 0.52, and row 6 (187) 8 threads 48.7 / 41.5: each item then streams all the
// rows of x for each gate's short run of panels (results/machine16-step-projection-ab-2026-11-24.txt).
constexpr Index kStepProjectionRows = 1;
// A call of a single step (T = 1: a decoder step, row 3) runs that step as one phase by
// units, its projection in the same items, up to this many rows: the call is then one phase
// where it was three (the projection, the step's product, its element-wise math), and the
// few rows of x stay in cache for every item. 2-core machine, 2 threads, medians of 4
// alternating processes, ms, one phase / three: row 3 (LSTM N = 10, H = 512) 0.153 / 0.160,
// LSTM N = 16 0.246 / 0.248, GRU N = 8 0.076 / 0.078, LSTM N = 4 H = 1024 0.347 / 0.366
// (results/single-step-units-ab-2026-11-25.txt). 16-core machine, same processes: row 3 at
// 16 threads 0.119 / 0.191, at 8 0.173 / 0.193, LSTM N = 16 at 16 0.170 / 0.281, GRU N = 8 at
// 16 0.087 / 0.162; at 4 threads row 3 0.321 / 0.282 and the others within the rounds' spread.
constexpr Index kSingleStepUnitRows = 16;
// A thread that has no item left in a phase spins this long for the phase to end (the other
// threads' items of one step take a few to a few tens of microseconds); for kPhasePatienceUs
// more it yields its core while a thread still running the phase's items claimed them on
// that core (descheduled, it may get it back) and spins otherwise; then it sleeps until the
// phase ends (runtime/job.cpp). 2-core machine, 2 threads, medians of rows 2 / 4 / 5 in ms (`ab.py`-style
// runs of ours.make_step; idle, then under two busy processes, then right after PyTorch,
// ONNX Runtime and NumPy ran, benchmarks/neighbours.py):
//   spin 50 µs, yield 300 µs:  idle 0.045 / 0.73 / 5.1  loaded 0.066 / 1.29 / 9.0  after 0.55 / 1.64 / 10.8
//   spin 50 µs, no yield:      idle 0.050 / 0.82 / 4.5  loaded 0.065 / 1.45 / 8.8  after 0.30 / 1.72 / 10.4
//   spin 1 ms, no yield:       idle 0.044 / 0.69 / 4.8  loaded 0.064 / 1.40 / 11.7 after 0.53 / 1.44 / 12.3
// Within the noise of one run each; the first gives the core away soonest to a descheduled
// team member. (The per-step barrier this replaced: row 4 loaded 0.75 ms in one run, 82 in
// the next.) Again on a 2-core AVX2 Zen 3 with Linux 6.18's EEVDF scheduler, where a yield
// may give the core away for a whole slice: no yield, or a 300 µs spin without one, was
// faster in no round, idle or beside 1 or 2 busy processes (rows 2, 4, 5; results/
// phase-wait-ab-2cores-epyc-avx2-2026-11-29.txt). Yielding only while a thread that claimed
// items of the phase last ran on the waiter's core, spinning otherwise (a yield there hands
// the core to a busy process for a slice while the items' thread runs elsewhere): same
// machine, 5 alternating rounds, medians of rows 2 / 3 / 4 / 5 in ms, yielding always /
// only beside such a thread:
//   idle            0.089 / 0.077  0.631 / 0.581  1.48 / 1.62  17.7 / 14.9
//   beside 1 busy   0.140 / 0.140  1.12 / 1.05    2.98 / 2.79  32.2 / 28.8
//   beside 2 busy   0.093 / 0.087  1.04 / 0.578   5.22 / 1.89  36.8 / 35.0
// (beside 2 busy processes row 4 faster in every round, 1.64-2.92 against 4.24-5.90 ms; the
// rounds of every other cell overlap). On the 16-core machine, 4 rounds, rows 2-6 at 8 and
// 16 threads idle and at 16 beside 8 busy processes, train rows 8 and 12 at 16: every cell
// within the rounds' spread (results/phase-wait-beside-ab-2cores-epyc-avx2-2026-11-30.txt).
// With workers that move (kCoreMoveGapUs), a 2 ms patience instead: no cell outside the
// spread of the 300 µs build's rounds, on either machine (results/core-moves-ab-2cores-zen4-
// 2026-12-01.txt, results/machine16-core-moves-ab-2026-12-01.txt).
constexpr long kPhaseSpinUs = 50;
constexpr long kPhasePatienceUs = 300;
// A worker waiting beside a descheduled team member moves to another core (runtime/
// core_moves.hpp) at most once per this many microseconds, and yields in between: a move
// costs 34-47 µs on an idle machine (benchmarks/core_move_cost.py), so moving takes a worker
// at most about 5 % of its time. Measured with builds_under_load.py against 3beadc4, which always yielded
// (alternating processes, medians of their medians in ms). 2-core Zen 4, 2 threads, 5 rounds,
// beside 1 busy process, yielding / moving: row 2 0.083 / 0.055, row 3 0.637 / 0.350, row 4
// 1.85 / 1.05, row 5 18.0 / 16.1, row 6 128 / 126; train rows 8, 12, 15 (3 rounds) 54.9 /
// 49.4, 103.2 / 97.6, 103.9 / 99.7; idle and beside 2 busy processes every row within the
// rounds' spread (results/core-moves-ab-2cores-zen4-2026-12-01.txt). There, without moves,
// the caller and its worker shared one core while the busy process had the other: row 4's
// worker was on a CPU 13-18 % of the time and on a run queue 81-86 %; moving, 50-52 % and
// 43-48 % (results/thread-shares-core-moves-2cores-zen4-2026-12-01.md). 16-core machine, 16
// threads, 4 rounds, idle and beside 8 busy processes: rows 2-6 within the rounds' spread,
// and train rows 8, 10, 12 too (timed only with the 2 ms patience build named above the
// patience); 55-72 moves a second per worker (results/machine16-core-moves-ab-2026-12-01.txt).
// Not varied: the gap itself (the moves made stay far below it).
constexpr long kCoreMoveGapUs = 1000;
// A waiter pulls onto its core a worker that holds a phase's items on another core and has
// not run for this long (runtime/job.cpp, pull_holder; docs/runtime.md). 2-core Zen 4, 2
// threads beside 1 busy process, with pulls / without, medians of 4 alternating processes,
// ms: pulling after 20 µs of not running, judged by /proc's schedstat (which counts a running
// thread's time only up to its last tick, so running holders were pulled too): row 6 100 /
// 127, row 4 1.27 / 1.05. After 100 µs by the thread's CPU clock: row 6 94 / 113, row 4 1.10
// / 0.99. After 200 µs, watched across the wait: row 6 88 / 106, rows 2-4 28-34 % slower;
// with the worker then going back to the core it was pulled from, and only in jobs older
// than kPullJobAgeUs: row 6 77 / 115, rows 2-4 within the spread
// (results/pulls-ab-2cores-zen4-2026-12-01.txt). Not varied further.
constexpr long kPullAfterUs = 200;
// Pulls happen only in jobs that have run this long: in calls of a millisecond or two the
// moves keep the threads apart, and a pull's two migrations cost more than they save (row 2
// beside 1 busy process, 2-core Zen 4: 0.057 ms with pulls in every job, 0.048 with this
// limit, 0.047 without pulls).
constexpr long kPullJobAgeUs = 2000;
// A thread out of items takes the last unclaimed item of another slot's share at once. Tried
// and rejected: leaving it to its owner until the owner had not claimed for twice the
// thief's item time, so that an owner a little behind keeps its slice of R in its cache. On
// the 16-core machine row 6 at 16 threads went 24.9 -> 27.8 ms, row 8 8.3 -> 9.3 (medians of
// 4 alternating processes, each within the other's spread;
// results/machine16-steal-grace-ab-2026-11-25.txt).
// A worker with no job watches for the next one this long before it sleeps, so the parallel
// sections of one call, and of calls made back to back, start at once. A wake-up from sleep
// is what a parallel call loses below the thresholds above (medians 0.1-0.2 ms slower than
// their mins in thresholds-2026-11-22T200141). A worker that found no slot in its last job
// (a spare: the team was smaller than the pool) sleeps at once instead, and an offer wakes
// sleepers only for the helpers the watching workers cannot provide (worker_pool.cpp). 16-core
// machine, 4 alternating rounds of a process each, medians in ms, spares watching / sleeping:
// row 2 (a team of 6) 16 threads 0.090 / 0.059 (ONNX Runtime 0.059 in machine16-infer-sweep-
// 2026-11-25T0048), 8 threads 0.080 / 0.063; rows 3, 4, 5 at 16 within the rounds' spread
// (0.205 / 0.197, 0.472 / 0.466, 2.31 / 2.38); train at 16: row 8 6.39 / 6.27, row 10 42.0 /
// 40.5, row 12 13.36 / 13.14 (results/machine16-spare-sleep-ab-2026-11-25.txt). Each worker
// sleeps in its own place, and an offer wakes the workers whose home slots its team has:
// woken at random, the sleepers left after row 1 (a team of 2) took row 2's slots only after
// kSpareJoinUs. In bench_rnn.py's sweep order, 4 rounds, row 2 at 16 threads 0.068 -> 0.052,
// at 8 0.060 -> 0.056; rows 1 and 3-6, and train rows 8, 10, 12 at 16, within the rounds'
// spread (results/machine16-home-wake-ab-2026-11-25.txt).
// An offer's caller wakes each sleeper it chose itself, before it starts on its own items.
// Tried and rejected: relayed wake-ups, the caller waking one and each woken worker up to two
// more, so that the caller starts at once. A woken worker runs tens of microseconds after its
// wake-up call, and the relay put two or three such delays in a row: 16-core machine, medians
// of 4 alternating rounds, ms, relayed / by the caller, after the calling thread spun 1 ms: row
// 2 at 16 threads 0.188 / 0.158, row 3 0.263 / 0.194, row 4 0.901 / 0.709; slower in 14 of 16
// cells after 1 or 25 ms at 8 and 16 threads (results/machine16-wake-relay-ab-2026-12-02.txt).
constexpr long kWorkerSpinUs = 100;
// A worker whose slot a job's team lacks waits this long before it takes another worker's
// free slot (worker_pool.cpp): a watching worker joins within about a microsecond, so on an
// idle machine every worker keeps its own slot, and the share of the weights in its cache,
// from call to call; under load a descheduled worker's slot is taken soon after. 16-core
// machine, medians of 4 alternating processes, ms, own slots / slots in joining order: row 2
// 4 threads 0.098 / 0.112, 8 threads 0.084 / 0.095, 16 threads 0.111 / 0.110; row 4 4
// threads 0.75 / 0.81, 8 and 16 within 2 %; rows 3, 5, 8, 10 within their run-to-run spread
// (row 5 8 threads 5.2 / 4.3 with processes from 4.0 to 5.9; results/machine16-home-slots-ab-2026-11-24.txt).
constexpr long kSpareJoinUs = 10;
// A host OpenMP pool (runtime/host_openmp.hpp, rnngraph.torch's default) stalls when its
// barriers, which spin without yielding (libgomp: 300,000 rounds, about 9 ms here), wait
// for a member the OS has descheduled: next to NumPy's OpenBLAS or ONNX Runtime workers
// spinning on the same cores, or when the OS wakes a member onto the caller's core after a
// pause. A region that took longer than kHostPoolStallUs to start and end, outside the job,
// stalled: healthy ones take microseconds, stalled ones took 0.4-8.5 ms (median 6.7; 57 of 63
// calls of row 4 beside torch, ONNX Runtime and NumPy). When kHostPoolStalls of the last
// kHostPoolRegions regions stalled, jobs run on rnngraph's own workers for kHostPoolRestUs.
// A torch training loop stalls a few times while it warms up and rarely after: one stall
// must not end the sharing that makes it faster. Measured, 2 threads:
//   benchmarks/neighbours.py (neighbours-2026-11-23T071817), the fall-back off -> on, ms:
//   beside torch, ONNX Runtime and NumPy, row 2 13.6 -> 0.53, row 4 14.8 -> 1.9, row 5
//   20.3 -> 11.3, row 8 48.2 -> 31.8 (rnngraph's own workers: 0.53, 1.7, 10.0, 29.4);
//   after a pause, row 2 11.3 -> 0.41, row 4 10.4 -> 1.8 (rows 5 and 8 did not stall);
//   a torch loop, Linear -> rnngraph.torch.LSTM (T25 N16 H512) -> Linear with backward, 40
//   steps' warm-up then 60: 18.5-19.4 ms a step with the fall-back, 18.5-19.9 without it,
//   23-24 on rnngraph's own workers.
constexpr long long kHostPoolStallUs = 1000;
constexpr int kHostPoolRegions = 8;
constexpr int kHostPoolStalls = 3;
constexpr long long kHostPoolRestUs = 500'000;

// ---- Memory kept between calls: rnngraph/memory.hpp (kIdleRelease, kKeptBytes) --------

}  // namespace rnngraph::tuning
