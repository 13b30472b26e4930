// A worker that waits for a phase's last items while the thread running them sits
// descheduled on the worker's own core moves itself to another core, instead of yielding.
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
// affinity. A worker moves by narrowing its affinity mask to the chosen core and then setting
// the mask it had back at once (the kernel keeps a thread where it is when its mask widens),
// so its mask is always the one it inherited, apart from those microseconds.
#pragma once

#include <functional>

namespace rnngraph::runtime {

// Moves the calling thread from core `from` to another core in its affinity mask for which
// taken(core) is false, restoring its mask after; whether it moved. It takes the first such
// core after `from` (wrapping around), so that threads moving off different cores spread
// out rather than all landing on the lowest free one. 16-core machine, 16 threads beside 8
// busy processes, 4 alternating rounds, lowest / next (ms): row 5 3.54 / 2.83, row 3 0.191 /
// 0.173, rows 4 and 6 within the rounds' spread (results/machine16-move-target-ab-2026-12-01.txt). False,
// with nothing changed, where the mask has no such core, the system refuses (e.g. a seccomp
// filter) or there is no such call (outside Linux).
bool move_off_core(int from, const std::function<bool(int core)>& taken);

// Marks the calling thread as one of rnngraph's own workers (WorkerPool::work), the only
// threads that move; and whether it is one.
void mark_own_worker();
bool own_worker();

// Whether workers move at all (rnngraph::set_worker_moves; on by default), and counting
// their moves (rnngraph::worker_moves).
bool worker_moves_enabled();
void count_worker_move();

}  // namespace rnngraph::runtime
