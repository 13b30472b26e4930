// What every call of the binding does with its arguments: read the label-keyed inputs,
// pick the float or double instantiation, and raise memory errors naming the op.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "array_args.hpp"

namespace rnngraph::bind {

// A call's inputs by Swift label: a dict whose keys must be labels the op takes; a missing
// label and None both mean the input is absent. (Read once per call, without building a
// Python string per label: a small op's call is a few microseconds in all.)
class Inputs {
 public:
  Inputs(const py::handle& mapping, const std::string& op,
         std::initializer_list<const char*> labels)
      : op_(op), labels_(labels), interned_(interned(labels)), values_(labels.size()) {
    if (!PyDict_Check(mapping.ptr())) {
      throw py::type_error(op + ": inputs: expected a dict {label: numpy.ndarray or None}, got " +
                           type_name(mapping));
    }
    PyObject *key = nullptr, *value = nullptr;
    Py_ssize_t position = 0;
    while (PyDict_Next(mapping.ptr(), &position, &key, &value)) {
      const size_t slot = PyUnicode_Check(key) ? find(key) : labels_.size();
      if (slot == labels_.size()) unknown(py::handle(key));
      values_[slot] = py::reinterpret_borrow<py::object>(value);
    }
  }
  // The value given for `label` (one of the op's labels), or None.
  py::object operator[](const char* label) const {
    for (size_t i = 0; i < labels_.size(); ++i) {
      if (std::strcmp(labels_.begin()[i], label) == 0) {
        return values_[i] ? values_[i] : py::none();
      }
    }
    return py::none();
  }
  template <class S>
  const S* array(const char* label, const Shape& shape, bool required = false) const {
    return input<S>((*this)[label], op_, label, shape, required);
  }

 private:
  size_t find(PyObject* key) const {
    // A dict built in Python has interned keys: found by pointer, before comparing text.
    for (size_t i = 0; i < interned_.size(); ++i) {
      if (interned_[i] == key) return i;
    }
    size_t i = 0;
    for (const char* label : labels_) {
      if (PyUnicode_CompareWithASCIIString(key, label) == 0) return i;
      ++i;
    }
    return i;
  }
  [[noreturn]] void unknown(const py::handle& key) const {
    std::string all;
    for (const char* label : labels_) all += (all.empty() ? "" : ", ") + std::string(label);
    throw py::value_error(op_ + ": inputs: unknown label " + std::string(py::repr(key)) + " (" +
                          op_ + " takes " + all + ")");
  }

  // The labels as interned Python strings, made once per list of labels (found again by the
  // labels' own pointers, so a list at a reused address is never taken for another; the
  // GIL guards the cache). Comparing every key's text with the labels cost a tenth of a
  // one-step GRU call's instructions (callgrind).
  static const std::vector<PyObject*>& interned(std::initializer_list<const char*> labels) {
    struct Made {
      std::vector<const char*> labels;
      std::vector<PyObject*> strings;  // kept for the process's lifetime
    };
    static std::deque<Made> made;  // (a deque: references to its elements stay valid)
    for (const Made& m : made) {
      if (std::equal(m.labels.begin(), m.labels.end(), labels.begin(), labels.end())) {
        return m.strings;
      }
    }
    Made m{std::vector<const char*>(labels), {}};
    for (const char* label : labels) {
      PyObject* s = PyUnicode_InternFromString(label);
      if (!s) throw py::error_already_set();
      m.strings.push_back(s);
    }
    made.push_back(std::move(m));
    return made.back().strings;
  }

  std::string op_;
  std::initializer_list<const char*> labels_;
  const std::vector<PyObject*>& interned_;
  std::vector<py::object> values_;  // by label; null where not given
};

// The dtype of `array` (source, or recurrentWeight when packing) picks the instantiation;
// every other array must match it.
template <class Fn>
auto dispatch(const std::string& op, const char* label, const py::object& array, Fn&& fn) {
  if (array.is_none()) throw py::value_error(op + ": " + label + " is required");
  py::array a = as_array(array, op, label);
  if (elements_are<float>(a)) return fn(float{});
  if (elements_are<double>(a)) return fn(double{});
  throw py::type_error(op + ": " + label + ": expected dtype float32 or float64, got " +
                       std::string(py::str(a.dtype())));
}

// fn(), with a memory error raised as MemoryError naming the op (and, where rnngraph's own
// allocation failed, the size it asked for).
template <class Fn>
auto naming_memory_errors(const std::string& op, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc& e) {
    PyErr_SetString(PyExc_MemoryError, (op + ": out of memory: " + e.what()).c_str());
    throw py::error_already_set();
  }
}

}  // namespace rnngraph::bind
