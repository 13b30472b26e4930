#include "runtime/core_moves.hpp"

#include <atomic>
#include <ctime>

#include "rnngraph/threads.hpp"
#include "runtime/waiting.hpp"
#include "tuning.hpp"

#if defined(__linux__)
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace rnngraph::runtime {

namespace {
std::atomic<bool> moves_on{true};
std::atomic<long long> moves_made{0};
std::atomic<long long> pulls_made{0};
std::atomic<bool> pulls_on_flag{true};
thread_local bool is_own_worker = false;
thread_local long long last_move_us = 0;

#if defined(__linux__)
// Thread `tid`'s mask (0: the calling thread's) narrowed to core `core`.
bool narrow_to(pid_t tid, int core) {
  cpu_set_t only;
  CPU_ZERO(&only);
  CPU_SET(core, &only);
  return sched_setaffinity(tid, sizeof(only), &only) == 0;
}

// The calling thread's mask set to `had`; if that is refused (the cgroup's CPUs changed and
// none of it is left), every CPU, which the kernel cuts down to the cgroup's: a worker is
// never left on one core.
void set_back(const cpu_set_t& had) {
  if (sched_setaffinity(0, sizeof(had), &had) == 0) return;
  cpu_set_t every;
  CPU_ZERO(&every);
  for (int core = 0; core < CPU_SETSIZE; ++core) CPU_SET(core, &every);
  sched_setaffinity(0, sizeof(every), &every);
}

// Narrows the calling thread's mask to `to` (it runs there once this returns), then sets
// `had` back unless something else changed the mask meanwhile.
bool move_to(int to, const cpu_set_t& had) {
  if (!narrow_to(0, to)) return false;
  cpu_set_t now;
  CPU_ZERO(&now);
  if (sched_getaffinity(0, sizeof(now), &now) != 0 || CPU_COUNT(&now) != 1 ||
      !CPU_ISSET(to, &now)) {
    return true;
  }
  set_back(had);
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
bool own_worker() { return is_own_worker; }

#if defined(__linux__)
int own_thread_id() { return static_cast<int>(syscall(SYS_gettid)); }

bool pulls_on() { return pulls_on_flag.load(std::memory_order_relaxed); }

// The thread's CPU-time clock (what pthread_getcpuclockid gives: the kernel's per-thread
// scheduler clock, ~tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED), which includes the
// time a running thread has run since the last tick (its schedstat in /proc does not).
long long thread_run_ns(int tid) {
  const clockid_t clock = static_cast<clockid_t>((~static_cast<unsigned>(tid)) << 3 | 4 | 2);
  timespec t{};
  if (clock_gettime(clock, &t) != 0) return -1;
  return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec;
}

bool save_mask(void* had, unsigned had_bytes) {
  if (had_bytes < sizeof(cpu_set_t)) return false;
  CPU_ZERO(static_cast<cpu_set_t*>(had));
  return sched_getaffinity(0, sizeof(cpu_set_t), static_cast<cpu_set_t*>(had)) == 0;
}

bool pull_worker(int tid, int to) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(tid, sizeof(mask), &mask) != 0 || !CPU_ISSET(to, &mask)) return false;
  if (!narrow_to(tid, to)) return false;
  pulls_made.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void restore_mask(const void* had, unsigned had_bytes, int back) {
  if (had_bytes < sizeof(cpu_set_t)) return;
  const cpu_set_t& mask = *static_cast<const cpu_set_t*>(had);
  if (back < 0 || back >= CPU_SETSIZE || !CPU_ISSET(back, &mask) || !move_to(back, mask)) {
    set_back(mask);
  }
}
#else
int own_thread_id() { return 0; }
bool pulls_on() { return false; }
long long thread_run_ns(int) { return -1; }
bool save_mask(void*, unsigned) { return false; }
bool pull_worker(int, int) { return false; }
void restore_mask(const void*, unsigned, int) {}
#endif

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
long long worker_pulls() { return runtime::pulls_made.load(std::memory_order_relaxed); }
void set_worker_pulls(bool on) { runtime::pulls_on_flag.store(on, std::memory_order_relaxed); }
void set_worker_moves(bool on) { runtime::moves_on.store(on, std::memory_order_relaxed); }
}  // namespace rnngraph
