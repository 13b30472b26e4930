// The GRU (SPEC.md section 5): gates [z, r, o] (or [r, z, o] with resetGateFirst), reset
// before or after the recurrent product, flipZ, zState = activated gates.
#pragma once

#include "rnngraph/problem.hpp"

namespace rnngraph {

template <class S>
void gru_forward(const GRUOptions& options, const RNNShape& shape, const ForwardArgs<S>& args);

template <class S>
void gru_gradients(const GRUOptions& options, const RNNShape& shape, const GradientArgs<S>& args);

}  // namespace rnngraph
