// A forward op's weights packed once for many calls. A Graph packs the weights it holds as
// constants at their first run (as an inference runtime packs its initializers); each call
// then streams the packed copy instead of the arrays (packed_gemm.hpp).
#pragma once

#include <vector>

#include "rnngraph/packed_gemm.hpp"
#include "rnngraph/problem.hpp"

namespace rnngraph {

template <class S>
struct PackedForwardWeights {
  Index D = 0, G = 0, H = 0, I = 0;          // what they were packed for (I = 0: no inputWeight)
  std::vector<PackedPanels<S>> recurrent_t;  // per direction: Rᵀ [H, G·H], one block per gate
  PackedPanels<S> input_t;                   // Wᵀ [I, D·G·H], one block per direction and gate

  bool matches(const RNNShape& s) const {
    return D == s.D() && G == s.gates && H == s.H && I == (s.has_input_weight ? s.I : 0);
  }
};

// recurrentWeight [D, G·H, H]; inputWeight [D·G·H, I] or nullptr.
template <class S>
void pack_forward_weights(Index D, Index G, Index H, Index I, const S* recurrentWeight,
                          const S* inputWeight, PackedForwardWeights<S>& out) {
  out.D = D;
  out.G = G;
  out.H = H;
  out.I = inputWeight ? I : 0;
  out.recurrent_t.resize(static_cast<size_t>(D));
  for (Index d = 0; d < D; ++d) {
    pack_panels(recurrentWeight + d * G * H * H, 1, H, H, G, H, out.recurrent_t[static_cast<size_t>(d)]);
  }
  if (inputWeight) pack_panels(inputWeight, 1, I, I, D * G, H, out.input_t);
}

}  // namespace rnngraph
