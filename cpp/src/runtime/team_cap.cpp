#include "runtime/team_cap.hpp"

#include <algorithm>
#include <atomic>

#include "rnngraph/threads.hpp"
#include "runtime/waiting.hpp"
#include "tuning.hpp"

namespace rnngraph::runtime {
namespace {

constexpr int kMaxHalvings = 8;  // 256 threads down to one
// The time the jobs since `window_start_us` lost, and the jobs that lost any (for measurements).
std::atomic<long long> window_start_us{0}, lost_in_window_us{0}, stalled_jobs{0};
std::atomic<int> halved{0};
std::atomic<long long> next_give_back_us{0};  // when one halving is given back
std::atomic<long long> halvings{0};
std::atomic<bool> enabled{true};

}  // namespace

int capped_team(int team) {
  int h = halved.load(std::memory_order_relaxed);
  if (h == 0) return team;
  const long long now = now_us();
  // A rest that passed without new stalls gives one halving back (one caller does it).
  if (now >= next_give_back_us.load(std::memory_order_relaxed) &&
      halved.compare_exchange_strong(h, h - 1, std::memory_order_relaxed)) {
    next_give_back_us.store(now + tuning::kTeamRestUs, std::memory_order_relaxed);
    --h;
  }
  return std::max(1, team >> h);
}

void record_team_job(long long lost_us) {
  if (lost_us <= 0) return;
  stalled_jobs.fetch_add(1, std::memory_order_relaxed);
  const long long now = now_us();
  if (now - window_start_us.load(std::memory_order_relaxed) > tuning::kTeamWindowUs) {
    window_start_us.store(now, std::memory_order_relaxed);  // a new window (racy: approximate)
    lost_in_window_us.store(0, std::memory_order_relaxed);
  }
  if (lost_in_window_us.fetch_add(lost_us, std::memory_order_relaxed) + lost_us <
      tuning::kTeamLostUs)
    return;
  lost_in_window_us.store(0, std::memory_order_relaxed);
  window_start_us.store(now, std::memory_order_relaxed);
  if (!enabled.load(std::memory_order_relaxed)) return;
  int h = halved.load(std::memory_order_relaxed);
  while (h < kMaxHalvings && !halved.compare_exchange_weak(h, h + 1, std::memory_order_relaxed)) {
  }
  halvings.fetch_add(1, std::memory_order_relaxed);
  next_give_back_us.store(now + tuning::kTeamRestUs, std::memory_order_relaxed);
}

}  // namespace rnngraph::runtime

namespace rnngraph {

TeamCap team_cap() {
  using namespace runtime;
  return {stalled_jobs.load(std::memory_order_relaxed), halvings.load(std::memory_order_relaxed),
          halved.load(std::memory_order_relaxed)};
}

void set_team_cap(bool on) {
  using namespace runtime;
  enabled.store(on, std::memory_order_relaxed);
  if (!on) halved.store(0, std::memory_order_relaxed);
}

}  // namespace rnngraph
