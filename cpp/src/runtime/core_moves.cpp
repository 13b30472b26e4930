#include "runtime/core_moves.hpp"

#include <atomic>

#include "rnngraph/threads.hpp"
#include "runtime/waiting.hpp"
#include "tuning.hpp"

#if defined(__linux__)
#include <sched.h>
#endif

namespace rnngraph::runtime {

namespace {
std::atomic<bool> moves_on{true};
std::atomic<long long> moves_made{0};
thread_local bool is_own_worker = false;
thread_local long long last_move_us = 0;

#if defined(__linux__)
// Narrows the calling thread's mask to `to` (it runs there once this returns), then sets
// `had` back unless something else changed the mask meanwhile. If `had` is refused (the
// cgroup's CPUs changed and none of it is left), every CPU, which the kernel cuts down to the
// cgroup's: a worker is never left on the one core.
bool move_to(int to, const cpu_set_t& had) {
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(to, &only);
  if (sched_setaffinity(0, sizeof(only), &only) != 0) return false;
  cpu_set_t now;
  CPU_ZERO(&now);
  if (sched_getaffinity(0, sizeof(now), &now) != 0 || !CPU_EQUAL(&now, &only)) return true;
  if (sched_setaffinity(0, sizeof(had), &had) != 0) {
    cpu_set_t every;
    CPU_ZERO(&every);
    for (int core = 0; core < CPU_SETSIZE; ++core) CPU_SET(core, &every);
    sched_setaffinity(0, sizeof(every), &every);
  }
  return true;
}

bool move_within_mask(int from, const std::function<bool(int)>& taken) {
  cpu_set_t had;
  CPU_ZERO(&had);
  if (sched_getaffinity(0, sizeof(had), &had) != 0) return false;  // (over 1024 CPUs: EINVAL)
  for (int step = 1; step < CPU_SETSIZE; ++step) {
    const int core = (from + step) % CPU_SETSIZE;
    if (CPU_ISSET(core, &had) && !taken(core)) return move_to(core, had);
  }
  return false;
}
#else
bool move_within_mask(int, const std::function<bool(int)>&) { return false; }
#endif
}  // namespace

void mark_own_worker() { is_own_worker = true; }

bool move_off_core(int from, const std::function<bool(int core)>& taken) {
  if (!is_own_worker || !moves_on.load(std::memory_order_relaxed)) return false;
  const long long now = now_us();
  if (now - last_move_us < tuning::kCoreMoveGapUs) return false;
  last_move_us = now;
  if (!move_within_mask(from, taken)) return false;
  moves_made.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace rnngraph::runtime

namespace rnngraph {
long long worker_moves() { return runtime::moves_made.load(std::memory_order_relaxed); }
void set_worker_moves(bool on) { runtime::moves_on.store(on, std::memory_order_relaxed); }
}  // namespace rnngraph
