// The LSTM (SPEC.md section 5): gates [i, f, z, o] (or [i, z, f, o] with forgetGateLast),
// peephole on all four gates, zState = activated gates.
#pragma once

#include "rnngraph/problem.hpp"

namespace rnngraph {

template <class S>
void lstm_forward(const LSTMOptions& options, const RNNShape& shape, const ForwardArgs<S>& args);

template <class S>
void lstm_gradients(const LSTMOptions& options, const RNNShape& shape, const GradientArgs<S>& args);

}  // namespace rnngraph
