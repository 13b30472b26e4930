// How one call spends its threads (see split_work).
#pragma once

#include <algorithm>
#include <vector>

#include "rnngraph/arrays.hpp"
#include "rnngraph/problem.hpp"
#include "rnngraph/threads.hpp"

namespace rnngraph {
namespace detail {

// How a call spends its threads. The batch rows of a recurrence never interact, so each
// direction's rows can be cut into chunks that run the whole time loop on their own thread,
// with no synchronisation per step; the two directions of a bidirectional op are independent
// too. A small problem stays on one thread (a second core must not slow it down), and a
// batch too small to cut leaves the threads to the BLAS inside each step.
struct Part {
  int d;
  Index row0, rows;
};

constexpr Index kParallelWork = Index(1) << 21;      // multiply-adds of the whole recurrence,
constexpr Index kParallelStepWork = Index(1) << 17;  // or of one step (however few steps)
constexpr Index kMinChunkRows = 8;

struct WorkSplit {
  std::vector<Part> parts;
  bool parallel = false;  // run the parts on their own threads
  int team = 1;           // > 1: one direction shared by this many threads, step by step
};

// Recurrent weights up to this size (bytes per direction) stream from the shared L3 cache
// fast enough for every thread to read all of them at each step of its own rows. Larger
// ones (against a 32 MiB L3) would be fetched from memory by each thread: then, unless the
// batch is large enough to make each pass over R pay off, the threads share one direction,
// each streaming only its slice of R. (Measured, 2 threads: R of 3 MiB with 32 rows, row
// chunks 1-4 % faster than sharing; 12 and 37 MiB with 16 and 32 rows, 2 % slower.)
constexpr Index kStreamedWeightBytes = Index(8) << 20;

inline WorkSplit split_work(const RNNShape& s, int recurrent_gates, Index scalar_bytes) {
  const int threads = get_num_threads();
  const Index step_work = s.D() * s.N * recurrent_gates * s.H * s.H;
  WorkSplit split;
  split.parallel = threads >= 2 && s.T > 0 && (s.T * step_work >= kParallelWork || step_work >= kParallelStepWork);
  const bool big_weights = recurrent_gates * s.H * s.H * scalar_bytes > kStreamedWeightBytes;
  if (split.parallel && s.D() == 1 && (s.N < 2 * kMinChunkRows || (big_weights && s.N <= 4 * kMinChunkRows))) {
    split.team = static_cast<int>(std::min<Index>(threads, std::max<Index>(1, s.H / 16)));
    split.parallel = false;
    split.parts.push_back({0, 0, s.N});
    return split;
  }
  Index chunks = 1;
  if (split.parallel) {
    const Index per_direction = std::max<Index>(1, threads / s.D());
    chunks = std::max<Index>(1, std::min(per_direction, s.N / kMinChunkRows));
  }
  for (int d = 0; d < s.D(); ++d) {
    for (Index c = 0; c < chunks; ++c) {
      const Index row0 = s.N * c / chunks, row1 = s.N * (c + 1) / chunks;
      split.parts.push_back({d, row0, row1 - row0});
    }
  }
  split.parallel = split.parallel && split.parts.size() > 1;
  return split;
}

}  // namespace detail
}  // namespace rnngraph
