#include "tuning.hpp"

#include <atomic>
#include <stdexcept>

#include "rnngraph/forced_paths.hpp"

namespace rnngraph::tuning {

namespace {

constexpr int kSites = static_cast<int>(ParallelSite::count);
std::atomic<Index> overrides[kSites] = {-1, -1, -1, -1, -1, -1, -1};
const char* const kSiteNames[kSites] = {"recurrence", "step", "gemm", "projection",
                                        "pass",       "pack", "team"};

}  // namespace

Index parallel_threshold(ParallelSite site) {
  const auto i = static_cast<int>(site);
  const Index value = overrides[i].load(std::memory_order_relaxed);
  return value >= 0 ? value : kParallelDefaults[i];
}

void set_parallel_threshold(ParallelSite site, Index value) {
  overrides[static_cast<int>(site)].store(value < 0 ? -1 : value, std::memory_order_relaxed);
}

}  // namespace rnngraph::tuning

namespace rnngraph {

std::vector<std::pair<std::string, Index>> parallel_thresholds() {
  std::vector<std::pair<std::string, Index>> out;
  for (int i = 0; i < tuning::kSites; ++i) {
    out.emplace_back(tuning::kSiteNames[i],
                     tuning::parallel_threshold(static_cast<tuning::ParallelSite>(i)));
  }
  return out;
}

void set_parallel_threshold(const std::string& site, Index value) {
  for (int i = 0; i < tuning::kSites; ++i) {
    if (site == tuning::kSiteNames[i]) {
      return tuning::set_parallel_threshold(static_cast<tuning::ParallelSite>(i), value);
    }
  }
  throw std::invalid_argument("set_parallel_threshold: unknown site '" + site + "'");
}

}  // namespace rnngraph
