// Wall time spent in each section of the recurrent ops, summed over calls: where a call's
// time goes (benchmarks/profile_rows.py reads it through rnngraph._core._profile). Off
// unless RNNGRAPH_PROFILE is set when rnngraph loads; then each section costs two clock
// reads.
#pragma once

#include <array>
#include <cstdint>

namespace rnngraph::profile {

enum class Section : int {
  projection,        // x·Wᵀ before the forward loops
  packing,           // R or Rᵀ packed into panels
  forward_loops,     // the forward time loops
  backward_prepare,  // the sequences the backward loops read
  backward_loops,    // the backward time loops
  weight_gradients,  // dR, dW, dx and the bias gradient after the loops
  count
};
constexpr const char* kSectionNames[] = {"projection",       "packing",        "forward_loops",
                                         "backward_prepare", "backward_loops", "weight_gradients"};

bool enabled();
// Seconds per section, and the number of times each was entered.
std::array<double, static_cast<int>(Section::count)> seconds();
std::array<std::int64_t, static_cast<int>(Section::count)> entries();
void reset();

class Scope {
 public:
  explicit Scope(Section section);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Section section_;
  std::int64_t start_ns_ = -1;
};

}  // namespace rnngraph::profile
