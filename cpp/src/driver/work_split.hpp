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

inline SplitPath choose_split(const RNNShape& s, int recurrent_gates, Index scalar_bytes,
                              int threads) {
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
  if (s.D() == 1 && (s.N < 2 * min_rows || (big_weights && s.N <= 4 * min_rows))) {
    return s.H / tuning::kTeamUnitsPerThread >= 2 ? SplitPath::team : SplitPath::serial;
  }
  return SplitPath::rows;
}

inline WorkSplit split_work(const RNNShape& s, int recurrent_gates, Index scalar_bytes) {
  const int threads = get_num_threads();
  const SplitPath path = choose_split(s, recurrent_gates, scalar_bytes, threads);
  WorkSplit split;
  split.path = path;
  if (path == SplitPath::team) {
    const bool forced = forced_paths().split == SplitPath::team;
    split.team =
        forced ? threads
               : static_cast<int>(std::min<Index>(threads, s.H / tuning::kTeamUnitsPerThread));
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
