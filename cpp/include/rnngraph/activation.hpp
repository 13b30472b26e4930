// The activations of SPEC.md section 2, as descriptors name them. Their vector code and
// derivatives are in cpp/src/vector_math.hpp.
#pragma once

#include <stdexcept>
#include <string>

namespace rnngraph {

enum class Activation : int { none = 0, relu = 1, tanh = 2, sigmoid = 3, hardSigmoid = 4 };

// The activation of raw value `value` (any integer: a binding passes its callers' 64-bit
// ints through, so that 2^31 is out of range here rather than a conversion error there).
inline Activation activation_from_int(long long value, const char* label) {
  if (value < 0 || value > 4) {
    throw std::invalid_argument(std::string(label) +
                                ": activation must be 0..4 (none, relu, tanh, "
                                "sigmoid, hardSigmoid), got " +
                                std::to_string(value));
  }
  return static_cast<Activation>(value);
}

}  // namespace rnngraph
