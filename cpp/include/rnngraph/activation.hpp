// Element-wise activations of SPEC.md section 2 and their derivatives.
// Every derivative is written as a function of the activated value y, so saved
// activated gates (zState) are enough for the backward pass.
#pragma once

#include <stdexcept>
#include <string>

#include "rnngraph/arrays.hpp"

namespace rnngraph {

enum class Activation : int { none = 0, relu = 1, tanh = 2, sigmoid = 3, hardSigmoid = 4 };

inline Activation activation_from_int(int value, const char* label) {
  if (value < 0 || value > 4) {
    throw std::invalid_argument(std::string(label) + ": activation must be 0..4 (none, relu, tanh, "
                                "sigmoid, hardSigmoid), got " + std::to_string(value));
  }
  return static_cast<Activation>(value);
}

// x <- act(x), in place. NaN propagates through every branch (no std::max).
template <class S>
void activate(Activation act, Block<S> x) {
  switch (act) {
    case Activation::none:
      return;
    case Activation::relu:
      x = (x < S(0)).select(S(0), x);
      return;
    case Activation::tanh:
      x = x.tanh();
      return;
    case Activation::sigmoid:
      x = S(1) / (S(1) + (-x).exp());
      return;
    case Activation::hardSigmoid:
      // SPEC.md section 2 (pinned): clamp(0.2 x + 0.5, 0, 1).
      x = S(0.2) * x + S(0.5);
      x = (x < S(0)).select(S(0), (x > S(1)).select(S(1), x));
      return;
  }
}

// g <- g * act'(x) where y = act(x) is given (the activated value).
template <class S>
void multiply_by_derivative(Activation act, ConstBlock<S> y, Block<S> g) {
  switch (act) {
    case Activation::none:
      return;
    case Activation::relu:
      g = (y > S(0)).select(g, S(0));
      return;
    case Activation::tanh:
      g *= S(1) - y.square();
      return;
    case Activation::sigmoid:
      g *= y * (S(1) - y);
      return;
    case Activation::hardSigmoid:
      g = ((y > S(0)) && (y < S(1))).select(S(0.2) * g, S(0));
      return;
  }
}

}  // namespace rnngraph
