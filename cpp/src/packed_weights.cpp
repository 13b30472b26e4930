#include "packed_weights.hpp"

namespace rnngraph {

template <class S>
std::shared_ptr<const PackedForwardWeights<S>> pack_forward_weights(Index D, Index G, Index H,
                                                                    Index I,
                                                                    const S* recurrentWeight,
                                                                    const S* inputWeight) {
  auto out = std::make_shared<PackedForwardWeights<S>>();
  out->D = D;
  out->G = G;
  out->H = H;
  out->I = inputWeight ? I : 0;
  out->recurrent_t.resize(static_cast<size_t>(D));
  for (Index d = 0; d < D; ++d) {
    pack_panels(recurrentWeight + d * G * H * H, 1, H, H, G, H,
                out->recurrent_t[static_cast<size_t>(d)]);
  }
  if (inputWeight) pack_panels(inputWeight, 1, I, I, D * G, H, out->input_t);
  // They live as long as the Graph that packed them, not as a call's workspace.
  for (auto& panels : out->recurrent_t) panels.data.unpooled();
  out->input_t.data.unpooled();
  return out;
}

template <class S>
bool packed_weights_match(const PackedForwardWeights<S>& packed, const RNNShape& shape) {
  return packed.matches(shape);
}

template std::shared_ptr<const PackedForwardWeights<float>> pack_forward_weights(Index, Index,
                                                                                 Index, Index,
                                                                                 const float*,
                                                                                 const float*);
template std::shared_ptr<const PackedForwardWeights<double>> pack_forward_weights(Index, Index,
                                                                                  Index, Index,
                                                                                  const double*,
                                                                                  const double*);
template bool packed_weights_match(const PackedForwardWeights<float>&, const RNNShape&);
template bool packed_weights_match(const PackedForwardWeights<double>&, const RNNShape&);

}  // namespace rnngraph
