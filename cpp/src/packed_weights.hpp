// The packed copy behind rnngraph/packed_weights.hpp.
#pragma once

#include <atomic>
#include <vector>

#include "packed_gemm.hpp"
#include "rnngraph/packed_weights.hpp"

namespace rnngraph {

template <class S>
class PackedForwardWeights {
 public:
  Index D = 0, G = 0, H = 0, I = 0;          // what they were packed for (I = 0: no inputWeight)
  std::vector<PackedPanels<S>> recurrent_t;  // per direction: Rᵀ [H, G·H], one block per gate
  PackedPanels<S> input_t;                   // Wᵀ [I, D·G·H], one block per direction and gate
  // The forward steps run with these weights so far, over every call: the parity with which
  // a call's first step sweeps Rᵀ's panels (driver/step_runner.hpp). Concurrent calls each
  // take their own count, in either order; which end a call starts on then need not match
  // what the cache holds, and the bits are the same either way.
  mutable std::atomic<Index> steps_swept{0};

  bool matches(const RNNShape& s) const {
    return D == s.D() && G == s.gates && H == s.H && I == (s.has_input_weight ? s.I : 0);
  }
};

}  // namespace rnngraph
