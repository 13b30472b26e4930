// A worker that waits for a phase's last items while the thread running them sits
// descheduled on the worker's own core moves itself to another core; the caller, and a host
// pool's threads, yield instead (Job::make_way).
//
// Why: on a loaded machine the scheduler tends to stack a job's threads on one core. A worker
// that sleeps is woken on its waker's core; three busy threads on two cores are, to the load
// balancer, balanced however they lie; so the caller and its worker often end up sharing a
// core while a busy process has the other one to itself. A yield then only swaps the two
// (they never run at once), and the call takes as long as on one thread. Moving off hands the
// waiter's core to the descheduled thread at once and puts the waiter where it competes with
// the other process for its own share (tuning::kCoreMoveGapUs has the measurements).
//
// Only rnngraph's own workers move: the caller's thread belongs to the user, and a host
// pool's threads (runtime/host_openmp.hpp) to their library; rnngraph never changes their
// affinity. A worker moves by narrowing its affinity mask to the chosen core, which returns
// once the thread runs there (after a scheduler slice at most, on a busy core), and then
// setting back the mask it had. What that leaves:
// - If something else changes the worker's mask while it is narrowed, that change stands
//   and the old mask is not set back.
// - On Linux 6.2 and later the kernel remembers a mask set this way: a cpuset that later
//   grows reaches a worker that has moved only within the mask it had then.
// - With more than CPU_SETSIZE (1024) possible CPUs the mask cannot be read here, and
//   workers yield instead of moving.
#pragma once

#include <functional>

namespace rnngraph::runtime {

// Marks the calling thread as one of rnngraph's own workers (WorkerPool::work), the only
// threads that move.
void mark_own_worker();

// For a thread beside a descheduled team member on core `from`: if it is one of rnngraph's
// own workers, moves are on (rnngraph::set_worker_moves) and it has not moved in the last
// tuning::kCoreMoveGapUs, moves it to another core of its mask for which taken(core) is
// false. Returns whether it moved (counted in rnngraph::worker_moves).
//
// The target is the first such core after `from`, wrapping around, so that threads moving
// off different cores spread out rather than all landing on the lowest free one. 16-core
// machine, 16 threads beside 8 busy processes, 4 alternating rounds, lowest / next, medians
// in ms: row 5 3.54 / 2.83, row 3 0.191 / 0.173 (each pair's rounds overlapping), rows 4
// and 6 the same (results/machine16-move-target-ab-2026-12-01.txt). The rule is kept for the
// spreading; on 2 cores both rules pick the same core.
bool move_off_core(int from, const std::function<bool(int core)>& taken);

// Whether the calling thread is one of rnngraph's own workers (mark_own_worker).
bool own_worker();
// The calling thread's id (gettid), or 0 where there is none to give.
int own_thread_id();

// Pulling (the other side of moving; Job::pull_holder, docs/runtime.md): a thread waiting for
// items that an own worker holds, descheduled on another core, narrows that worker's mask to
// the waiter's core, so the kernel moves it there at once, and then sleeps. The worker goes
// back to its old core and sets back its mask itself (restore_mask) once it runs out of items.
// Only own workers are pulled: rnngraph never changes the mask of a thread it did not start.
bool pulls_on();
// CPU time the thread `tid` of this process has run, in ns (its CPU-time clock), or -1.
long long thread_run_ns(int tid);
// The calling thread's mask, saved into `had` (cpu_set_t bytes); false where it cannot be read.
bool save_mask(void* had, unsigned had_bytes);
// Narrows thread `tid`'s mask to core `to`, if `to` is in it (the kernel then moves the
// thread there at once, running or not).
bool pull_worker(int tid, int to);
// Sets the calling thread's mask to `had` (as saved by save_mask), after going back to core
// `back` if that is one of `had`'s (-1: stays where it is): a move (move_off_core's rule).
void restore_mask(const void* had, unsigned had_bytes, int back = -1);

}  // namespace rnngraph::runtime
