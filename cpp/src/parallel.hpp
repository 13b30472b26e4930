// How rnngraph's kernels spread work over its threads (runtime/job.hpp underneath): how many
// blocks a piece of work is cut into, parallel_for over independent blocks, and
// parallel_phases for work done in steps that each need the previous one finished. Blocks
// are claimed dynamically by the calling thread and whichever workers are free, so a thread
// that the OS deschedules delays nobody, and results never depend on which thread ran what.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>

#include "rnngraph/threads.hpp"
#include "runtime/job.hpp"
#include "runtime/thread_state.hpp"
#include "tuning.hpp"

namespace rnngraph {

// How many blocks of at least `min_block` a parallel site cuts `extent` into: 1 when the
// work is below the site's threshold (tuning.hpp), with one thread, or inside a block of
// another parallel section; else up to tuning::kBlocksPerThread blocks per thread, so that
// a thread that falls behind leaves blocks for the others.
inline Index parallel_blocks(Index work, tuning::ParallelSite site, Index extent,
                             Index min_block = 1) {
  if (work < tuning::parallel_threshold(site) || in_parallel_part()) return 1;
  const Index threads = get_num_threads();
  if (threads < 2) return 1;
  return std::max<Index>(1, std::min(threads * tuning::kBlocksPerThread, extent / min_block));
}

// body(first, last) over runs of [0, count) that together cover it once, each run as one
// thread claimed it: on this thread and up to get_num_threads() - 1 workers when `parallel`,
// else a single run [0, count) here: for work whose neighbouring items are cheaper done
// together (parallel_for runs them one by one). An exception thrown by a body is rethrown
// here (the remaining runs are skipped).
template <class Body>
void parallel_runs(Index count, Body&& body, bool parallel = true) {
  const Index threads = parallel && !in_parallel_part() ? get_num_threads() : 1;
  if (threads < 2 || count < 2) {
    if (count > 0) body(Index(0), count);
    return;
  }
  // A phase holds at most runtime::Job's item limit: beyond it an item is a run of indices.
  const Index items = std::min<Index>(count, 4096);
  runtime::JobWork work;
  work.team = static_cast<int>(std::min(threads, items));
  work.phases = 1;
  work.items = [items](Index) { return items; };
  work.run = [&](Index, Index first, Index last, int) {
    body(count * first / items, count * last / items);
  };
  runtime::run_job(std::move(work));
}

// body(i) for every i in [0, count), each exactly once, as parallel_runs claims them (in
// order here when not `parallel`).
template <class Body>
void parallel_for(Index count, Body&& body, bool parallel = true) {
  parallel_runs(
      count,
      [&](Index first, Index last) {
        for (Index i = first; i < last; ++i) body(i);
      },
      parallel);
}

// A team of up to `team` threads runs `phases` phases in order: phase p has items(p) items
// (at most 65535), and run(p, first, last, slot) runs the items [first, last) of phase p
// on the thread holding `slot` (0 .. team - 1, for per-thread scratch). Phase p + 1 starts
// once every item of phase p is done. `from_back(p)`: the threads claim the items of phase
// p from the back of their shares (runtime::JobWork::from_back); by default from the front.
// Exceptions as in parallel_for.
template <class Items, class Run>
void parallel_phases(int team, Index phases, Items&& items, Run&& run,
                     std::function<bool(Index)> from_back = {}) {
  runtime::JobWork work;
  work.team = in_parallel_part() ? 1 : team;
  work.phases = phases;
  work.items = [&](Index p) { return static_cast<Index>(items(p)); };
  work.run = [&](Index p, Index first, Index last, int slot) { run(p, first, last, slot); };
  work.from_back = std::move(from_back);
  runtime::run_job(std::move(work));
}

}  // namespace rnngraph
