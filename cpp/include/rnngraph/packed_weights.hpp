// A forward op's weights packed once for many calls. A Graph packs the weights it holds as
// constants at their first run (as an inference runtime packs its initializers); each call
// then streams the packed copy instead of the arrays (ForwardArgs::packed).
#pragma once

#include <memory>

#include "rnngraph/problem.hpp"

namespace rnngraph {

template <class S>
class PackedForwardWeights;  // opaque: cpp/src/packed_weights.hpp

// Pack recurrentWeight [D, G·H, H] and inputWeight [D·G·H, I] (or nullptr: no inputWeight).
template <class S>
std::shared_ptr<const PackedForwardWeights<S>> pack_forward_weights(Index D, Index G, Index H,
                                                                    Index I,
                                                                    const S* recurrentWeight,
                                                                    const S* inputWeight);

// Whether `packed` holds the weights of a call of this shape.
template <class S>
bool packed_weights_match(const PackedForwardWeights<S>& packed, const RNNShape& shape);

}  // namespace rnngraph
