// How a call spends its threads on its time loops.
#pragma once

#include <algorithm>
#include <vector>

#include "parallel.hpp"
#include "tuning.hpp"
#include "rnngraph/forced_paths.hpp"

namespace rnngraph::detail {

// The batch rows of a recurrence never interact, so each direction's rows can be cut into
// chunks that run the whole time loop on their own thread, with no synchronisation per step;
// the two directions of a bidirectional op are independent too (SplitPath::rows). A batch
// too small to cut shares each step among a team of threads instead (SplitPath::team), and
// a small problem stays on one thread (SplitPath::serial): a second core must not slow it.
struct Part {
  int d;
  Index row0, rows;
};

struct WorkSplit {
  SplitPath path = SplitPath::serial;
  std::vector<Part> parts;  // serial and rows: one time loop each
  bool parallel = false;    // rows: run the parts on their own threads
  int team = 1;             // team: each direction in turn shared by this many threads
};

// Threads that share each step of a direction: at most one per kTeamUnitsPerThread hidden
// units and per the "team" site's multiply-adds of the step's product (tuning.hpp; a
// divisor, so 0, set for a measurement, counts as 1).
inline int team_size(const RNNShape& s, int recurrent_gates, int threads) {
  const Index step_work = s.N * recurrent_gates * s.H * s.H;
  const Index work_per_thread =
      std::max<Index>(1, tuning::parallel_threshold(tuning::ParallelSite::team));
  return static_cast<int>(std::max<Index>(
      1,
      std::min({Index(threads), s.H / tuning::kTeamUnitsPerThread, step_work / work_per_thread})));
}

inline SplitPath choose_split(const RNNShape& s, int recurrent_gates, Index scalar_bytes,
                              bool dependent_product, int threads) {
  const SplitPath forced = forced_paths().split;
  if (forced != SplitPath::automatic) return forced;
  const Index step_work = s.D() * s.N * recurrent_gates * s.H * s.H;
  const bool parallel =
      threads >= 2 && s.T > 0 &&
      (s.T * step_work >= tuning::parallel_threshold(tuning::ParallelSite::recurrence) ||
       step_work >= tuning::parallel_threshold(tuning::ParallelSite::step));
  if (!parallel) return SplitPath::serial;
  const bool big_weights =
      recurrent_gates * s.H * s.H * scalar_bytes > tuning::kStreamedWeightBytes;
  const Index min_rows = tuning::kMinChunkRows;
  const bool small_batch = s.N < 2 * min_rows || (big_weights && s.N <= 4 * min_rows);
  // Row chunks that would leave threads idle (16 rows on 16 threads make 2 chunks): up to
  // 64 rows, the threads share each step instead, when the step is large enough for a team
  // and has no second product that waits for the first (GRU reset-before: its team runs
  // that product a row at a time). 16-core machine, 16 threads: row 8 (N = 16) 22.8 ms as a
  // team against 24.3 in 2 chunks, row 12 (N = 32) 33 against 38 (results/machine16-resweep-
  // 2026-11-22T2252.md); row 13 (N = 64) 87.5 against 113.6 in 8 chunks of 8 rows (the other
  // 8 threads idle) and row 10 (N = 64) 45.0 against 63.4, once a team's items read the step's
  // operand in place (kCopyRowsMinPanels; copied by each item: 138.5 and 62.6; results/
  // machine16-team-operand-ab-2026-11-24.txt). Row 15 (reset-before, N = 32): 53 against 43.
  // So too, with weights over kStreamedWeightBytes, when every thread would have a chunk of
  // only kMinChunkRows rows, streaming all of R for them at each step where a team's thread
  // streams its share for all rows. 8 threads, row 13 (N = 64, R of 16 MiB): 151.6 ms as a
  // team against 163.0 in 8 chunks, faster in each of 5 alternating rounds, where row 10
  // (R of 4 MiB) was level and keeps its chunks (results/machine16-split-ab-c2ad8a3-
  // 2026-12-03.txt); with this rule, on another instance, 120.7 against 135.3 in each of 8
  // rounds, and row 19 (float64) 276.9 against 301.0 (machine16-team-big-weights-ab-
  // 2026-12-03.txt). Earlier A/Bs of the same split on other instances went either way
  // (level over 6 rounds in machine16-rows-team-ab-2026-11-29.txt); none had the chunks
  // ahead in every round.
  const Index chunks = s.N / min_rows;
  const bool few_chunks = (chunks < threads || (big_weights && chunks == threads)) &&
                          s.N <= 8 * min_rows && !dependent_product;
  if (s.D() == 1 && (small_batch || few_chunks)) {
    if (team_size(s, recurrent_gates, threads) >= 2) return SplitPath::team;
    return small_batch ? SplitPath::serial : SplitPath::rows;
  }
  return SplitPath::rows;
}

inline WorkSplit split_work(const RNNShape& s, int recurrent_gates, Index scalar_bytes,
                            bool dependent_product) {
  const int threads = get_num_threads();
  const SplitPath path = choose_split(s, recurrent_gates, scalar_bytes, dependent_product, threads);
  WorkSplit split;
  split.path = path;
  if (path == SplitPath::team) {
    const bool forced = forced_paths().split == SplitPath::team;
    split.team = forced ? threads : team_size(s, recurrent_gates, threads);
    return split;
  }
  Index chunks = 1;
  if (path == SplitPath::rows) {
    const bool forced = forced_paths().split == SplitPath::rows;
    const Index per_direction = std::max<Index>(1, threads / s.D());
    chunks =
        std::max<Index>(1, std::min(per_direction, forced ? s.N : s.N / tuning::kMinChunkRows));
  }
  for (int d = 0; d < s.D(); ++d) {
    for (Index c = 0; c < chunks; ++c) {
      const Index row0 = s.N * c / chunks, row1 = s.N * (c + 1) / chunks;
      split.parts.push_back({d, row0, row1 - row0});
    }
  }
  split.parallel = path == SplitPath::rows && threads >= 2 && split.parts.size() > 1;
  return split;
}

}  // namespace rnngraph::detail
