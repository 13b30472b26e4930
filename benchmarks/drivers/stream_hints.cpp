// Can a pass over a row's weights leave the core's L2 to the Python that runs after it?
// A probe of two cache hints on this CPU (not rnngraph code): WEIGHTS_MIB of floats summed
// with AVX-512 loads, plainly, with PREFETCHNTA ahead of the loads (lines meant for L1 only),
// and with CLDEMOTE behind them (each line pushed out to the shared L3 once read). For each:
// the pass's time; a random walk over WALK_KIB of lines right after it, against the walk
// with nothing before it (an intact L2 keeps it at the warm time); and a plain pass right
// after it (whether the weights are still in L3 for the next call).
//
//   c++ -O2 -std=c++17 -mavx512f -mcldemote benchmarks/drivers/stream_hints.cpp -o /tmp/hints
//   /tmp/hints [WEIGHTS_MIB [WALK_KIB]]          (defaults 12 and 512)
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

enum class Hint { none, prefetch_nta, demote };

template <Hint H>
float pass(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
  for (size_t i = 0; i < n; i += 32) {  // two 64-byte lines a step
    if constexpr (H == Hint::prefetch_nta) {
      _mm_prefetch(reinterpret_cast<const char*>(p + i) + 1024, _MM_HINT_NTA);
      _mm_prefetch(reinterpret_cast<const char*>(p + i) + 1024 + 64, _MM_HINT_NTA);
    }
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
    if constexpr (H == Hint::demote) {
      if (i >= 256) {  // lines read 1 KiB ago
        _cldemote(const_cast<float*>(p + i - 256));
        _cldemote(const_cast<float*>(p + i - 256 + 16));
      }
    }
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

// A cyclic random walk over `bytes` of cache lines (one index a line).
struct Walk {
  std::vector<size_t> next;
  explicit Walk(size_t bytes) {
    const size_t lines = bytes / 64;
    std::vector<size_t> order(lines);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(1));
    next.assign(lines * 8, 0);
    for (size_t k = 0; k < lines; ++k) next[order[k] * 8] = order[(k + 1) % lines] * 8;
  }
  size_t run() const {
    size_t i = 0;
    for (size_t s = 0; s < next.size() / 8; ++s) i = next[i];
    return i;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <Hint H>
void report(const char* name, const float* w, size_t n, const Walk& walk) {
  volatile float sink = 0;
  volatile size_t trail = 0;
  std::vector<double> passes, walks, warm, next;
  for (int r = 0; r < 200; ++r) {
    trail = trail + walk.run();  // the walk's lines back in L2: the next walk is warm
    auto t0 = Clock::now();
    trail = trail + walk.run();
    auto t1 = Clock::now();
    sink = sink + pass<H>(w, n);
    auto t2 = Clock::now();
    trail = trail + walk.run();
    auto t3 = Clock::now();
    sink = sink + pass<Hint::none>(w, n);
    auto t4 = Clock::now();
    warm.push_back(micros(t0, t1));
    passes.push_back(micros(t1, t2));
    walks.push_back(micros(t2, t3));
    next.push_back(micros(t3, t4));
  }
  const double p = median(passes);
  std::printf(
      "%-13s pass %7.1f us (%5.1f GB/s); walk after it %6.1f us (warm %5.1f); "
      "a plain pass next %7.1f us\n",
      name, p, n * sizeof(float) / p / 1e3, median(walks), median(warm), median(next));
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 12;
  const size_t walk_kib = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 512;
  const size_t n = mib * 1024 * 1024 / sizeof(float);
  std::vector<float> w(n + 1024, 1e-6f);  // (the prefetches run up to 1 KiB past the end)
  const Walk walk(walk_kib * 1024);
  std::printf("weights %zu MiB, walk over %zu KiB; medians of 200 rounds\n", mib, walk_kib);
  report<Hint::none>("plain", w.data(), n, walk);
  report<Hint::prefetch_nta>("prefetchnta", w.data(), n, walk);
  report<Hint::demote>("cldemote", w.data(), n, walk);
  return 0;
}
