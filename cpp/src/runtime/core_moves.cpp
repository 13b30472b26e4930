#include "runtime/core_moves.hpp"

#include "rnngraph/threads.hpp"

#include <atomic>

#if defined(__linux__)
#include <sched.h>
#endif

namespace rnngraph::runtime {

namespace {
std::atomic<bool> moves_on{true};
std::atomic<long long> moves_made{0};
thread_local bool is_own_worker = false;
}  // namespace

void mark_own_worker() { is_own_worker = true; }
bool own_worker() { return is_own_worker; }

bool worker_moves_enabled() { return moves_on.load(std::memory_order_relaxed); }
void count_worker_move() { moves_made.fetch_add(1, std::memory_order_relaxed); }

#if defined(__linux__)
bool move_off_core(int from, const std::function<bool(int core)>& taken) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  int to = -1;
  for (int step = 1; step < CPU_SETSIZE && to < 0; ++step) {
    const int core = (from + step) % CPU_SETSIZE;
    if (CPU_ISSET(core, &allowed) && !taken(core)) to = core;
  }
  if (to < 0) return false;
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(to, &only);
  // Returns once the thread runs on `to` (the kernel migrates a running thread before the
  // call returns).
  if (sched_setaffinity(0, sizeof(only), &only) != 0) return false;
  // The mask it had, back. That fails only if the cgroup's CPUs changed in between and
  // none of the old mask is left; then every CPU, which the kernel cuts down to the
  // cgroup's (a worker is never left on the one core).
  if (sched_setaffinity(0, sizeof(allowed), &allowed) != 0) {
    cpu_set_t every;
    CPU_ZERO(&every);
    for (int core = 0; core < CPU_SETSIZE; ++core) CPU_SET(core, &every);
    sched_setaffinity(0, sizeof(every), &every);
  }
  return true;
}
#else
bool move_off_core(int, const std::function<bool(int)>&) { return false; }
#endif

}  // namespace rnngraph::runtime

namespace rnngraph {
long long worker_moves() { return runtime::moves_made.load(std::memory_order_relaxed); }
void set_worker_moves(bool on) { runtime::moves_on.store(on, std::memory_order_relaxed); }
}  // namespace rnngraph
