// A Job: work that any number of threads can finish together, and that never waits for a
// particular thread. It is a sequence of phases; phase p is cut into items, and phase p + 1
// starts once every item of phase p is done (the steps of a recurrence: a product, then the
// element-wise math that reads it).
//
// Each item is claimed by exactly one thread, dynamically. A slot (the caller's is 0, the
// workers' 1 .. team - 1) owns a contiguous share of each phase's items and claims them from
// the front (or, in a phase that JobWork::from_back names, from the back), so on an idle
// machine each thread keeps working on the same slice of the weights (which stays in its
// cache). A thread that has run out of its own share takes the unclaimed items of the share
// with the most left, from the other end: a slot whose thread the OS has descheduled, or
// that no worker has joined, is finished by the others. A thread out of items waits for the
// phase's last ones (Job::work): it makes way only for a thread still running some that
// claimed them on its core, a worker by moving to another core (runtime/core_moves.hpp; at
// most once a millisecond, yielding in between), the caller and a host pool's threads by
// yielding.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/waiting.hpp"

namespace rnngraph::runtime {

using Index = std::int64_t;

struct JobWork {
  int team = 1;                             // slots: the caller's (0) and up to team - 1 workers'
  Index phases = 1;                         // at most 2^32 - 1
  std::function<Index(Index phase)> items;  // items of a phase (0: the phase is skipped)
  // Runs the items [first, last) of a phase on the thread that holds `slot`.
  std::function<void(Index phase, Index first, Index last, int slot)> run;
  // Whether the slots claim their own shares of a phase from the back (and take over others' from
  // the front); empty: never. A time loop whose items sweep the weights from the back on every
  // other step (driver/step_runner.hpp, step_direction) claims them that way too, so that each
  // thread starts the step on the part of its share it read last.
  std::function<bool(Index phase)> from_back;
};

class Job {
 public:
  explicit Job(JobWork work);
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // A slot in [1, team) for a worker that joins, or -1 when the job is full or finished:
  // `home` when it is free (a worker asks for the same slot in every job, so on an idle
  // machine it works on the same share of the same data call after call, which stays in its
  // cache), else another free one.
  int join(int home);
  int team() const { return work_.team; }
  // Whether a worker could still join.
  bool wants_helpers() const;
  // Claims and runs items until every phase is done; returns then. The caller runs slot 0.
  // Items only run while the job is unfinished, so whoever returns from here last, the
  // caller's state that `run` refers to is still alive.
  void work(int slot);
  bool finished() const { return phase_.load() >= work_.phases; }
  // The first exception an item threw, rethrown (the job still runs every item's slot to
  // the end, skipping the items' work).
  void rethrow_first_error() const;

 private:
  // A slot's share of the current phase: [tag: phase, 32 bits][front: 16][back: 16].
  struct alignas(64) Share {
    std::atomic<std::uint64_t> range{0};
    std::atomic<bool> taken{false};  // a worker holds this slot (Job::join)
    // The CPU its thread ran on when it claimed its first item of the current phase, until it
    // has run out of items there; -1: none.
    std::atomic<int> running_on{-1};
    // Its thread's id once a waiter may pull it onto its core (an own worker in a job older
    // than tuning::kPullJobAgeUs, core_moves.hpp), else 0.
    std::atomic<int> thread_id{0};
    // 0: not pulled; 1: a waiter is pulling it; 2: pulled (its mask to set back in `had`).
    std::atomic<int> pull_state{0};
    alignas(8) unsigned char had[128];  // its thread's mask before it may be pulled (cpu_set_t)
  };
  static constexpr Index kMaxItems = 0xFFFF;

  bool claim(int slot, std::uint32_t phase, Index& first, Index& last);
  static bool take(Share& share, std::uint32_t phase, bool from_back, Index& first, Index& last);
  void open_phase(Index phase);
  void finish_items(std::uint32_t phase, Index count);
  void record_error();
  bool item_runs_on(int cpu, int slot) const;
  // A waiter's view of one holder it may pull (pull_holder): its slot (-1: none), thread,
  // CPU time and since when that has not changed.
  struct PullWatch {
    int slot = -1, thread_id = 0;
    long long run_ns = -1, since_us = 0;
  };
  WaitChoice make_way(int slot, std::uint32_t phase, PullWatch& watch);
  bool pull_holder(int slot, std::uint32_t phase, int cpu, PullWatch& watch);
  void restore_if_pulled(Share& mine, int claimed_on);

  JobWork work_;
  std::vector<Share> shares_;
  alignas(64) WaitWord phase_;
  std::atomic<bool> owners_from_back_{false};    // the current phase's (JobWork::from_back)
  alignas(64) std::atomic<Index> remaining_{0};  // unfinished items of the current phase
  alignas(64) std::atomic<int> joined_{1};       // slots reserved, the caller's included
  std::atomic<bool> failed_{false};
  unsigned float_state_;  // the caller's (thread_state.hpp), for every thread of the job
  long long start_us_;    // when the job was made (pull_holder pulls only in older jobs)
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

// Runs `work` on this thread and on whichever of rnngraph's workers are free (up to
// work.team - 1 of them); returns when every item is done and rethrows an item's exception.
void run_job(JobWork work);

}  // namespace rnngraph::runtime
