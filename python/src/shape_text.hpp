// A shape as the binding's error messages write it: "[2, 3, 4]".
#pragma once

#include <cstddef>
#include <sstream>
#include <string>

namespace rnngraph::bind {

template <class Dims>
std::string shape_str(const Dims& dims) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < dims.size(); ++i) o << (i ? ", " : "") << dims[i];
  o << "]";
  return o.str();
}

}  // namespace rnngraph::bind
