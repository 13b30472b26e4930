// Checking NumPy arrays at the C++ boundary: dtype, rank, shape and layout are verified
// before any pointer reaches the core, so calling rnngraph._core directly with bad arrays
// raises TypeError/ValueError instead of reading out of bounds.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "output_pool.hpp"
#include "shape_text.hpp"

#include "rnngraph/problem.hpp"

namespace rnngraph::bind {

namespace py = pybind11;
using Shape = std::vector<Index>;

inline Shape shape_of(const py::array& a) {
  Shape s;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s.push_back(a.shape(i));
  return s;
}

// The Python type name of obj, for error messages.
inline std::string type_name(const py::handle& obj) {
  return py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

inline py::array as_array(const py::object& obj, const std::string& where) {
  if (!py::isinstance<py::array>(obj)) {
    throw py::type_error(where + ": expected a numpy.ndarray, got " + type_name(obj));
  }
  return py::reinterpret_borrow<py::array>(obj);
}

// The same for an op's input `label`, its message built only on failure (every call reads a
// few inputs this way).
inline py::array as_array(const py::object& obj, const std::string& op, const char* label) {
  if (!py::isinstance<py::array>(obj)) as_array(obj, op + ": " + label);  // raises
  return py::reinterpret_borrow<py::array>(obj);
}

// Whether a's elements are S in native byte order. Compared by type number and byte order,
// not by dtype object identity: an array that went through pickle (multiprocessing, a
// worker process, a file) or whose dtype carries metadata has an equal, not the same,
// dtype object.
template <class S>
bool elements_are(const py::array& a) {
  const py::dtype d = a.dtype();
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  constexpr char native = '<';
#else
  constexpr char native = '>';
#endif
  const char order = d.byteorder();
  return d.num() == py::dtype::of<S>().num() && (order == '=' || order == '|' || order == native);
}

// A checked, read-only view of an input; nullptr when the optional input is None. (Error
// messages are built only on failure: this runs for every array of every call.)
template <class S>
const S* input(const py::object& obj, const std::string& op, const char* label,
               const Shape& expected, bool required = false) {
  auto where = [&] { return op + ": " + label; };
  if (obj.is_none()) {
    if (required) throw py::value_error(where() + " is required");
    return nullptr;
  }
  if (!py::isinstance<py::array>(obj)) as_array(obj, where());  // raises the TypeError
  const auto a = py::reinterpret_borrow<py::array>(obj);
  if (!elements_are<S>(a)) {
    throw py::type_error(where() + ": expected dtype " + std::string(py::str(py::dtype::of<S>())) +
                         " (all tensors of one op share the source's dtype), got " +
                         std::string(py::str(a.dtype())));
  }
  bool same = a.ndim() == static_cast<py::ssize_t>(expected.size());
  for (size_t i = 0; same && i < expected.size(); ++i)
    same = a.shape(static_cast<py::ssize_t>(i)) == expected[i];
  if (!same) {
    throw py::value_error(where() + ": expected shape " + shape_str(expected) + ", got " +
                          shape_str(shape_of(a)));
  }
  if (!(a.flags() & py::array::c_style) || !(a.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_)) {
    throw py::value_error(where() + ": expected a C-contiguous, aligned array");
  }
  return static_cast<const S*>(a.data());
}

// A new output array (large ones from the output pool, output_pool.hpp).
template <class S>
py::array_t<S> output(const Shape& shape) {
  return pooled_array<S>(std::vector<py::ssize_t>(shape.begin(), shape.end()));
}

// A Python bool, else TypeError naming the op and the argument (numpy.bool_ too, which
// pybind11's bool caster takes even without conversion).
inline bool strict_bool(const py::handle& value, const char* op, const char* argument) {
  if (!py::isinstance<py::bool_>(value)) {
    throw py::type_error(std::string(op) + ": " + argument + ": expected a bool, got " +
                         std::string(py::repr(value)));
  }
  return value.cast<bool>();
}

}  // namespace rnngraph::bind
