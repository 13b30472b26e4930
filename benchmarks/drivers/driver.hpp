// What the benchmark's C++ drivers (onednn/rnn_driver.cpp, compiled_call.cpp) share: how a
// step is timed, its inputs and outputs as IO_DIR/<name>.f32 files, and what main does once
// the step is made.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace driver {

template <class Step>
double seconds_of(Step& step) {
  const auto t0 = std::chrono::steady_clock::now();
  step.run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// As benchmarks/timing.py's measure and spread time the Python libraries: SETTLE_S of sleep,
// two warm-up steps, then repetitions filling BUDGET_S (at least MIN_REPS, or 5 for a step of
// 0.25 s or more; at most 1000). Returns the JSON fields median_ms, min_ms, mean_ms, p90_ms
// and reps. With RNN_DRIVER_TIMES set, every timed call's ms also goes to that file, one a
// line, in the order they ran (benchmarks/per_call_times.py).
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

// `count` float32 values from dir/<name>.f32 into `data` (row-major, as NumPy's tofile).
inline void read_floats(const std::string& dir, const std::string& name, float* data,
                        size_t count) {
  const std::string path = dir + "/" + name + ".f32";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  in.read(reinterpret_cast<char*>(data), static_cast<std::streamsize>(count * sizeof(float)));
  if (in.gcount() != static_cast<std::streamsize>(count * sizeof(float)))
    throw std::runtime_error(name + ".f32: expected " + std::to_string(count) + " floats");
}

// `count` float32 values from `data` to dir/<name>.f32.
inline void write_floats(const std::string& dir, const std::string& name, const float* data,
                         size_t count) {
  std::ofstream out(dir + "/" + name + ".f32", std::ios::binary);
  out.write(reinterpret_cast<const char*>(data),
            static_cast<std::streamsize>(count * sizeof(float)));
}

// A driver's main. Its command line has 10 arguments, the last three BUDGET_S MIN_REPS
// SETTLE_S, and an optional IO_DIR (else it prints "usage: NAME ARGS" and exits 2). make(io_dir)
// builds the step (a pointer); with an IO_DIR one untimed step runs and writes its outputs
// there, else the step is timed. Prints one JSON line: the timing (or "io": true) then
// `fields(step)` ("" or ", \"key\": value..."). An error goes to stderr after NAME, exit 1.
template <class Make, class Fields>
int run_or_time(const char* name, const char* args, int argc, char** argv, Make make,
                Fields fields) {
  if (argc != 11 && argc != 12) {
    std::fprintf(stderr, "usage: %s %s\n", name, args);
    return 2;
  }
  try {
    const std::string io_dir = argc == 12 ? argv[11] : "";
    auto step = make(io_dir);
    if (!io_dir.empty()) {
      step->run();
      step->write_outputs(io_dir);
      std::printf("{\"io\": true%s}\n", fields(*step).c_str());
    } else {
      const std::string timing =
          measure(*step, std::stod(argv[8]), std::stoi(argv[9]), std::stod(argv[10]));
      std::printf("{%s%s}\n", timing.c_str(), fields(*step).c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
  return 0;
}

}  // namespace driver
