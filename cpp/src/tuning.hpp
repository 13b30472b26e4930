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
  count
};
// Defaults, indexed by ParallelSite. Measured on the 2-core development machine (AMD EPYC
// Zen 5, 2 threads against 1, `python3 benchmarks/thresholds.py`): see each line.
constexpr Index kParallelDefaults[] = {
    Index(1) << 21,  // recurrence: 2^21 multiply-adds
    Index(1) << 17,  // step: 2^17 multiply-adds
    Index(1) << 22,  // gemm: 2^22 multiply-adds
    Index(1) << 19,  // projection: 2^19 multiply-adds
    Index(1) << 18,  // pass: 2^18 elements
    Index(1) << 18,  // pack: 2^18 elements
};
static_assert(sizeof(kParallelDefaults) / sizeof(Index) == static_cast<int>(ParallelSite::count));

// The threshold in force for `site` (the default unless set_parallel_threshold moved it).
Index parallel_threshold(ParallelSite site);
// For measurements only: move a threshold (a negative value restores the default).
void set_parallel_threshold(ParallelSite site, Index value);

// ---- How a call spends its threads (driver/work_split.hpp) ----------------------------
// Row chunks never have fewer rows than this: a thinner chunk runs its step products on too
// few rows for the register tiles (packed_gemm.cpp), and each chunk streams all of R.
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
constexpr Index kTeamUnitsPerThread = 16;

// ---- The forward step's product (driver/direction.hpp) --------------------------------
// The forward packs Rᵀ into panels once per call when T·N reaches kPackWeightsRows and the
// batch reaches kPackWeightsBatch or the hidden size is at most kPackWeightsHidden: a batch
// of a few rows streams R's own rows as dot products faster than a copy is made (a packed
// copy pays off over 32 or more step rows). The backward always packs R.
constexpr Index kPackWeightsRows = 32;
constexpr Index kPackWeightsBatch = 16;
constexpr Index kPackWeightsHidden = 128;
// Up to this many rows of x, the input projection streams packed weights (a Graph's
// constants) with the panel kernel; more rows go to the BLAS, which blocks x for its caches.
constexpr Index kPackedProjectionRows = 256;

// ---- Product kernels (gemm.cpp) -------------------------------------------------------
// Below this many multiply-adds a BLAS call costs more in dispatch than in arithmetic
// (a [1, 32] x [32, 128] step of a tiny LSTM), so the small kernel does the work.
constexpr Index kSmallGemm = 32 * 1024;
// A product A·Bᵀ with at most this many rows (and n·k of at least kDotMinSize) goes to the
// dot-product kernel along B's rows: the BLAS would repack all of B for a few rows.
constexpr Index kDotRows = 16;
constexpr Index kDotMinSize = 1024;
// A product cut among threads gives each at least this many rows (or columns) of C.
constexpr Index kMinGemmBlock = 16;

// ---- Packed-panel tiles (packed_gemm.cpp) ---------------------------------------------
// Up to this many rows, tiles of three panels (the "few rows" regime): enough independent
// accumulators to hide the FMA latency of this bandwidth-bound product.
constexpr int kFewRows = 2;
// Up to this many rows (AVX-512 only: 24 accumulators), tiles of two panels without
// prefetching (the "some rows" regime). A product of a few rows is bound by the stream of B
// from L3, where the hardware prefetcher alone does better: 4-6 rows measured 1.3-1.5x
// faster this way than in one-panel tiles that prefetch the next panel.
constexpr int kSomeRowsWide = 6;

// ---- Waiting (threads.cpp) -------------------------------------------------------------
// A thread at a time-step barrier spins this many pauses before it yields: the wait is a
// few hundred nanoseconds when every thread runs.
constexpr long kBarrierSpins = 1L << 16;
// About 100 µs of spinning: a worker that finished a job looks for the next one this long
// before it sleeps (a wake-up from sleep costs tens of microseconds), so the parallel
// sections of one call, and of calls made back to back, start at once.
constexpr long kWorkerSpins = 4000;

// ---- Memory kept between calls --------------------------------------------------------
// Workspace blocks each thread keeps for its next call (workspace.hpp).
constexpr std::size_t kKeptWorkspaceBlocks = 16;

}  // namespace rnngraph::tuning
