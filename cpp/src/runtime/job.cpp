#include "runtime/job.hpp"

#include <algorithm>
#include <sched.h>
#include <stdexcept>
#include <utility>

#include "runtime/core_moves.hpp"
#include "runtime/host_openmp.hpp"
#include "runtime/thread_state.hpp"
#include "runtime/worker_pool.hpp"
#include "tuning.hpp"

namespace rnngraph::runtime {

namespace {
constexpr std::uint64_t pack(std::uint32_t phase, Index front, Index back) {
  return std::uint64_t(phase) << 32 | std::uint64_t(front) << 16 | std::uint64_t(back);
}
constexpr std::uint32_t tag_of(std::uint64_t v) { return static_cast<std::uint32_t>(v >> 32); }
constexpr Index front_of(std::uint64_t v) { return static_cast<Index>((v >> 16) & 0xFFFF); }
constexpr Index back_of(std::uint64_t v) { return static_cast<Index>(v & 0xFFFF); }
}  // namespace

Job::Job(JobWork work)
    : work_(std::move(work)),
      shares_(static_cast<size_t>(std::max(1, work_.team))),
      float_state_(job_float_state()),
      start_us_(now_us()) {
  if (work_.phases < 0 || work_.phases >= Index(UINT32_MAX))
    throw std::length_error("parallel job: too many phases");
  open_phase(0);
}

int Job::join(int home) {
  if (finished()) return -1;
  // A reservation first: past it, some slot in [1, team) is surely still free.
  if (joined_.fetch_add(1, std::memory_order_acq_rel) >= work_.team) return -1;
  auto take = [&](int slot) {
    return !shares_[static_cast<size_t>(slot)].taken.exchange(true, std::memory_order_acq_rel);
  };
  if (home > 0 && home < work_.team && take(home)) return home;
  for (int slot = work_.team - 1; slot > 0; --slot) {
    if (take(slot)) return slot;
  }
  return -1;  // not reached
}

bool Job::wants_helpers() const {
  return !finished() && joined_.load(std::memory_order_acquire) < work_.team;
}

// Makes `phase` (or the first later phase with items) the current one: its items are dealt
// into the slots' shares, slot o getting [⌈n·o/team⌉, ⌈n·(o+1)/team⌉) so the caller (slot 0)
// has items even when there are fewer than threads. Called by the constructor, then only by
// the thread that finished the previous phase's last item.
void Job::open_phase(Index phase) {
  Index n = 0;
  while (phase < work_.phases && (n = work_.items(phase)) == 0) ++phase;
  if (phase >= work_.phases) {
    phase_.store_and_wake(static_cast<std::uint32_t>(work_.phases));
    return;
  }
  if (n > kMaxItems) throw std::length_error("parallel job: too many items in a phase");
  const auto tag = static_cast<std::uint32_t>(phase);
  const Index team = static_cast<Index>(shares_.size());
  for (Index o = 0; o < team; ++o) {
    const Index front = (n * o + team - 1) / team, back = (n * (o + 1) + team - 1) / team;
    shares_[static_cast<size_t>(o)].range.store(pack(tag, front, back), std::memory_order_relaxed);
  }
  remaining_.store(n, std::memory_order_relaxed);
  owners_from_back_.store(work_.from_back && work_.from_back(phase), std::memory_order_relaxed);
  phase_.store_and_wake(tag);  // publishes the shares, the count and the direction with it
}

// Claims items of `share` in `phase`, half of what is left at one end (its owner's, or the
// other for another slot taking over; Job::claim).
bool Job::take(Share& share, std::uint32_t phase, bool from_back, Index& first, Index& last) {
  std::uint64_t v = share.range.load(std::memory_order_acquire);
  for (;;) {
    if (tag_of(v) != phase) return false;
    const Index front = front_of(v), back = back_of(v), left = back - front;
    if (left <= 0) return false;
    const Index grain = from_back ? std::max<Index>(1, left / 2) : (left + 1) / 2;
    first = from_back ? back - grain : front;
    last = first + grain;
    const std::uint64_t next = from_back ? pack(phase, front, first) : pack(phase, last, back);
    if (share.range.compare_exchange_weak(v, next, std::memory_order_acq_rel,
                                          std::memory_order_acquire)) {
      return true;
    }
  }
}

bool Job::claim(int slot, std::uint32_t phase, Index& first, Index& last) {
  // (A direction read after the phase moved on goes with shares of another tag: take fails.)
  const bool owner_back = owners_from_back_.load(std::memory_order_relaxed);
  if (take(shares_[static_cast<size_t>(slot)], phase, owner_back, first, last)) return true;
  for (;;) {  // the unclaimed items of the share with the most left
    Share* fullest = nullptr;
    Index most = 0;
    for (auto& share : shares_) {
      const std::uint64_t v = share.range.load(std::memory_order_acquire);
      if (tag_of(v) == phase && back_of(v) - front_of(v) > most) {
        most = back_of(v) - front_of(v);
        fullest = &share;
      }
    }
    if (!fullest) return false;
    if (take(*fullest, phase, !owner_back, first, last)) return true;
  }
}

void Job::record_error() {
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (!error_) error_ = std::current_exception();
  failed_.store(true, std::memory_order_relaxed);
}

// The thread that finished a phase's last item opens the next one. If that throws (a phase
// too large, items() failing), the job ends there: the error is kept for the caller, and the
// final phase is published so that no thread waits for a phase that will never open.
void Job::finish_items(std::uint32_t phase, Index count) {
  if (remaining_.fetch_sub(count, std::memory_order_acq_rel) != count) return;
  try {
    open_phase(Index(phase) + 1);
  } catch (...) {
    record_error();
    phase_.store_and_wake(static_cast<std::uint32_t>(work_.phases));
  }
}

void Job::work(int slot) {
  // The caller's floating-point state (denormals flushed); nested parallel sections run here.
  const ThreadState state(float_state_);
  Share& mine = shares_[static_cast<size_t>(slot)];
  // An own worker in a job old enough for pulls (pull_holder) may be pulled onto a waiter's
  // core: it saves its mask first, to set back afterwards, and only then shows its thread id.
  // (Its own moves set their masks back before it claims again.)
  const bool may_be_pulled = own_worker();
  bool pullable = false;
  int claimed_on = -1;  // the core where this thread claimed its items of the latest phase
  for (;;) {
    const std::uint32_t phase = phase_.load();
    if (Index(phase) >= work_.phases) break;
    Index first = 0, last = 0;
    bool claimed = false;  // once per phase: where this thread runs its items (Share::running_on)
    while (claim(slot, phase, first, last)) {
      if (!claimed) {
        if (may_be_pulled && !pullable && pulls_on() &&
            now_us() - start_us_ >= tuning::kPullJobAgeUs) {
          pullable = save_mask(mine.had, sizeof(mine.had));
          if (pullable) mine.thread_id.store(own_thread_id(), std::memory_order_relaxed);
        }
        claimed_on = sched_getcpu();
        mine.running_on.store(claimed_on, std::memory_order_release);
      }
      claimed = true;
      if (!failed_.load(std::memory_order_relaxed)) {
        try {
          work_.run(phase, first, last, slot);
        } catch (...) {
          record_error();
        }
      }
      finish_items(phase, last - first);
    }
    if (claimed) mine.running_on.store(-1, std::memory_order_relaxed);
    restore_if_pulled(mine, claimed_on);
    PullWatch watch;
    phase_.wait_while(phase, tuning::kPhaseSpinUs, tuning::kPhasePatienceUs,
                      [&] { return make_way(slot, phase, watch); });
  }
  // A waiter may be pulling this thread right now: wait for it to finish, then set back.
  while (mine.pull_state.load(std::memory_order_acquire) == 1) pause_once();
  restore_if_pulled(mine, claimed_on);
}

// This thread's mask as it was when it became pullable, if a waiter has pulled it since
// (pull_holder), after going back to `claimed_on`, the core it was pulled from (a waiter
// pulls only a thread still showing the core where it claimed its items).
void Job::restore_if_pulled(Share& mine, int claimed_on) {
  if (mine.pull_state.load(std::memory_order_acquire) != 2) return;
  restore_mask(mine.had, sizeof(mine.had), claimed_on);
  mine.pull_state.store(0, std::memory_order_release);
}

// A waiter on core `cpu`: pulls onto it an own worker that holds items of `phase` on another
// core and has not run for kPullAfterUs (descheduled there behind another thread; a waiter
// that only slept left its core idle while the worker waited out the other thread's slice).
// `watch` follows one such holder across the waiter's calls.
bool Job::pull_holder(int slot, std::uint32_t phase, int cpu, PullWatch& watch) {
  if (watch.slot >= 0) {
    Share& held = shares_[static_cast<size_t>(watch.slot)];
    const int on = held.running_on.load(std::memory_order_acquire);
    const int tid = held.thread_id.load(std::memory_order_relaxed);
    if (on >= 0 && on != cpu && tid == watch.thread_id) {
      const long long run_ns = thread_run_ns(tid);
      if (run_ns != watch.run_ns) {  // it ran: watch it afresh
        watch.run_ns = run_ns;
        watch.since_us = now_us();
        return false;
      }
      if (now_us() - watch.since_us < tuning::kPullAfterUs) return false;
      int expected = 0;
      if (phase_.load() != phase ||
          !held.pull_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        return false;
      }
      const bool pulled =
          held.running_on.load(std::memory_order_acquire) == on && pull_worker(tid, cpu);
      held.pull_state.store(pulled ? 2 : 0, std::memory_order_release);
      watch.slot = -1;
      return pulled;
    }
    watch.slot = -1;  // it finished, or moved here: look for another
  }
  for (size_t o = 0; o < shares_.size(); ++o) {
    const Share& other = shares_[o];
    const int on = other.running_on.load(std::memory_order_acquire);
    const int tid = other.thread_id.load(std::memory_order_relaxed);
    if (static_cast<int>(o) == slot || on < 0 || on == cpu || tid == 0) continue;
    watch = {static_cast<int>(o), tid, thread_run_ns(tid), now_us()};
    return false;
  }
  return false;
}

// Whether another slot's thread, still running items of the current phase, claimed them on
// core `cpu`, this thread's: one the OS has descheduled to run this one, which this thread
// holds back unless it yields or moves. A thread the OS has moved meanwhile is found on its
// old core (so this one may spin for kPhasePatienceUs where it could have made way, or make
// way where it could have spun).
bool Job::item_runs_on(int cpu, int slot) const {
  for (size_t o = 0; o < shares_.size(); ++o) {
    if (static_cast<int>(o) != slot &&
        shares_[o].running_on.load(std::memory_order_relaxed) == cpu) {
      return true;
    }
  }
  return false;
}

// For a thread waiting for phase `phase`'s last items (Job::work): what to do next. Beside a
// thread that runs them on its own core, it moves to another core if it may
// (runtime/core_moves.hpp) and yields otherwise. Elsewhere it spins, until a worker holding
// items on another core has not run for kPullAfterUs in a job older than kPullJobAgeUs: then
// it pulls that worker onto its core (pull_holder) and sleeps.
WaitChoice Job::make_way(int slot, std::uint32_t phase, PullWatch& watch) {
  const int cpu = sched_getcpu();
  if (cpu < 0) return WaitChoice::yield;  // unknown: yield, as a waiter always did before
  if (phase_.load() != phase) return WaitChoice::spin;
  if (item_runs_on(cpu, slot)) {
    return move_off_core(cpu, [&](int core) { return item_runs_on(core, slot); })
               ? WaitChoice::spin
               : WaitChoice::yield;
  }
  if (pulls_on() && now_us() - start_us_ >= tuning::kPullJobAgeUs &&
      pull_holder(slot, phase, cpu, watch)) {
    return WaitChoice::sleep;
  }
  return WaitChoice::spin;
}

void Job::rethrow_first_error() const {
  if (error_) std::rethrow_exception(error_);
}

void run_job(JobWork work) {
  if (work.team <= 1) {  // this thread alone: the phases in order, no shared state
    for (Index p = 0; p < work.phases; ++p) {
      const Index n = work.items(p);
      if (n > 0) work.run(p, 0, n, 0);
    }
    return;
  }
  const int team = work.team;
  auto job = std::make_shared<Job>(std::move(work));
  if (run_on_host_openmp(*job, team)) {  // inside a host such as PyTorch: its threads
    job->rethrow_first_error();
    return;
  }
  const int helpers = team - 1;
  WorkerPool& pool = WorkerPool::instance();
  pool.offer(job, helpers);
  struct Withdraw {  // even if work(0) throws
    WorkerPool& pool;
    const Job* job;
    ~Withdraw() { pool.withdraw(job); }
  } withdraw{pool, job.get()};
  job->work(0);
  job->rethrow_first_error();
}

}  // namespace rnngraph::runtime
