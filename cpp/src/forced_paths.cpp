#include "rnngraph/forced_paths.hpp"

#include <atomic>

namespace rnngraph {
namespace {

std::atomic<int> product{0}, tile{0}, split{0};

}  // namespace

void force_paths(const ForcedPaths& paths) {
  product.store(static_cast<int>(paths.product), std::memory_order_relaxed);
  tile.store(static_cast<int>(paths.tile), std::memory_order_relaxed);
  split.store(static_cast<int>(paths.split), std::memory_order_relaxed);
}

ForcedPaths forced_paths() {
  ForcedPaths p;
  p.product = static_cast<ProductPath>(product.load(std::memory_order_relaxed));
  p.tile = static_cast<TilePath>(tile.load(std::memory_order_relaxed));
  p.split = static_cast<SplitPath>(split.load(std::memory_order_relaxed));
  return p;
}

}  // namespace rnngraph
