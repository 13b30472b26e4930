// A shape as the binding's error messages write it: "[2, 3, 4]".
#pragma once

#include <cstddef>
#include <string>

namespace rnngraph::bind {

// std::to_string, not an ostringstream: on the 16-core machine (Ubuntu 24.04, Python 3.12,
// GCC 13) formatting a number through an iostream crashed inside the extension module.
template <class Dims>
std::string shape_str(const Dims& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

}  // namespace rnngraph::bind
