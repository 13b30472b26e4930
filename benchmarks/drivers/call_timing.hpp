// How the benchmark's C++ drivers time a step, as benchmarks/timing.py's measure and spread
// do for the Python libraries: SETTLE_S of sleep, two warm-up steps, then repetitions filling
// BUDGET_S (at least MIN_REPS, or 5 for a step of 0.25 s or more; at most 1000). Returns the
// JSON fields median_ms, min_ms, mean_ms, p90_ms and reps. With RNN_DRIVER_TIMES set, every
// timed call's ms also goes to that file, one a line, in the order they ran
// (benchmarks/per_call_times.py). Shared by onednn/rnn_driver.cpp and compiled_call.cpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace call_timing {

template <class Step>
double seconds_of(Step& step) {
  const auto t0 = std::chrono::steady_clock::now();
  step.run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <class Step>
std::string measure(Step& step, double budget_s, int min_reps, double settle_s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(settle_s));
  step.run();
  const double first = seconds_of(step);
  const int floor = first < 0.25 ? min_reps : 5;
  const int reps =
      std::max(floor, std::min(1000, static_cast<int>(budget_s / std::max(first, 1e-9))));
  std::vector<double> t(reps);
  for (double& s : t) s = seconds_of(step);
  if (const char* path = std::getenv("RNN_DRIVER_TIMES")) {  // every call, in order (ms)
    std::ofstream times(path);
    for (const double s : t) times << 1e3 * s << '\n';
  }
  std::sort(t.begin(), t.end());
  const size_t n = t.size();
  const double median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  const double mean = std::accumulate(t.begin(), t.end(), 0.0) / n;
  const double p90 = t[static_cast<size_t>(std::nearbyint(0.9 * (n - 1)))];
  char out[256];
  std::snprintf(out, sizeof out,
                "\"median_ms\": %.6g, \"min_ms\": %.6g, \"mean_ms\": %.6g, \"p90_ms\": %.6g, "
                "\"reps\": %zu",
                1e3 * median, 1e3 * t[0], 1e3 * mean, 1e3 * p90, n);
  return out;
}

}  // namespace call_timing
