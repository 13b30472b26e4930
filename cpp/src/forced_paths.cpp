#include "rnngraph/forced_paths.hpp"

#include <atomic>

#include "profile.hpp"

namespace rnngraph {
namespace {

std::atomic<int> product{0}, tile{0}, split{0}, sweep{0}, steps{0};

}  // namespace

void force_paths(const ForcedPaths& paths) {
  product.store(static_cast<int>(paths.product), std::memory_order_relaxed);
  tile.store(static_cast<int>(paths.tile), std::memory_order_relaxed);
  split.store(static_cast<int>(paths.split), std::memory_order_relaxed);
  sweep.store(static_cast<int>(paths.sweep), std::memory_order_relaxed);
  steps.store(static_cast<int>(paths.steps), std::memory_order_relaxed);
}

ForcedPaths forced_paths() {
  ForcedPaths p;
  p.product = static_cast<ProductPath>(product.load(std::memory_order_relaxed));
  p.tile = static_cast<TilePath>(tile.load(std::memory_order_relaxed));
  p.split = static_cast<SplitPath>(split.load(std::memory_order_relaxed));
  p.sweep = static_cast<SweepPath>(sweep.load(std::memory_order_relaxed));
  p.steps = static_cast<StepsPath>(steps.load(std::memory_order_relaxed));
  return p;
}

std::vector<ProfileSection> profile_sections() {
  const auto seconds = profile::seconds();
  const auto entries = profile::entries();
  std::vector<ProfileSection> out;
  for (size_t i = 0; i < seconds.size(); ++i) {
    out.push_back({profile::kSectionNames[i], seconds[i], entries[i]});
  }
  return out;
}

void reset_profile() { profile::reset(); }

}  // namespace rnngraph
