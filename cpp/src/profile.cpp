#include "profile.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>

namespace rnngraph::profile {

namespace {
constexpr int kCount = static_cast<int>(Section::count);
std::atomic<std::int64_t> total_ns[kCount];
std::atomic<std::int64_t> total_entries[kCount];
const bool profiling = std::getenv("RNNGRAPH_PROFILE") != nullptr;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool enabled() { return profiling; }

std::array<double, kCount> seconds() {
  std::array<double, kCount> out{};
  for (int i = 0; i < kCount; ++i) out[static_cast<size_t>(i)] = total_ns[i].load() * 1e-9;
  return out;
}

std::array<std::int64_t, kCount> entries() {
  std::array<std::int64_t, kCount> out{};
  for (int i = 0; i < kCount; ++i) out[static_cast<size_t>(i)] = total_entries[i].load();
  return out;
}

void reset() {
  for (int i = 0; i < kCount; ++i) {
    total_ns[i].store(0);
    total_entries[i].store(0);
  }
}

Scope::Scope(Section section) : section_(section) {
  if (profiling) start_ns_ = now_ns();
}

Scope::~Scope() {
  if (start_ns_ < 0) return;
  const int i = static_cast<int>(section_);
  total_ns[i].fetch_add(now_ns() - start_ns_, std::memory_order_relaxed);
  total_entries[i].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace rnngraph::profile
