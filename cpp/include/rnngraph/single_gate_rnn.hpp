// The single-gate RNN (SPEC.md section 5): z[t] = x'[t] + hm·Rᵀ, h[t] = act(z[t]).
// zState holds the pre-activation z[t].
#pragma once

#include "rnngraph/problem.hpp"

namespace rnngraph {

template <class S>
void single_gate_rnn_forward(const SingleGateRNNOptions& options, const RNNShape& shape,
                             const ForwardArgs<S>& args);

template <class S>
void single_gate_rnn_gradients(const SingleGateRNNOptions& options, const RNNShape& shape,
                               const GradientArgs<S>& args);

}  // namespace rnngraph
