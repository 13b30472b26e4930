// rnngraph's resident worker threads. A caller posts a Job (job.hpp) and works on it itself;
// free workers join it. Several calls can run at once (from several Python threads): each
// posts its own job, and a worker joins whichever needs helpers. No call ever starts threads
// of its own, and none waits for a worker that is busy elsewhere or descheduled.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/job.hpp"

namespace rnngraph::runtime {

class WorkerPool {
 public:
  // This process's pool. A forked child inherits none of the parent's workers, so it
  // starts a pool of its own (the parent's is left behind on purpose).
  static WorkerPool& instance();

  // Posts `job` for up to `helpers` workers, starting workers as needed. A worker that
  // cannot be started (a thread or memory limit) leaves the job to fewer threads.
  void offer(const std::shared_ptr<Job>& job, int helpers);
  // Takes a job back once it is finished; workers still inside it keep it alive.
  void withdraw(const Job* job);
  // Workers started so far.
  int workers();

 private:
  // Where a worker sleeps: each has its own, so an offer wakes the workers whose home slots
  // its team has rather than whichever sleepers a shared condition variable picks.
  struct Bed {
    std::condition_variable wake;
    bool asleep = false;
  };

  WorkerPool() = default;
  void work(int index, Bed* bed);
  std::shared_ptr<Job> open_job_locked() const;
  std::vector<Bed*> sleepers_to_wake_locked(int helpers, int count);

  std::mutex mutex_;  // the fields below
  std::vector<std::shared_ptr<Job>> open_;
  std::vector<std::unique_ptr<Bed>> beds_;  // one per worker started, by index
  std::atomic<unsigned> posted_{0};         // changes with every offer
  std::atomic<int> watching_{0};            // workers spinning on posted_ right now
};

}  // namespace rnngraph::runtime
