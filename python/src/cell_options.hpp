// The three cells as the binding sees them: their typed option structs (rnngraph._core.
// SingleGateRNNOptions, LSTMOptions, GRUOptions), and the one table of what each cell is
// called, how many gates it has and which input labels its ops take.
#pragma once

#include <pybind11/pybind11.h>

#include <initializer_list>
#include <string>
#include <variant>

#include "rnngraph/problem.hpp"

namespace rnngraph::bind {

namespace py = pybind11;

// One op call's options: which cell, and its descriptor's properties.
using CellOptions = std::variant<SingleGateRNNOptions, LSTMOptions, GRUOptions>;

struct CellTraits {
  const char* op;           // the forward op's name, also the cell's one spelling
  const char* gradient_op;  // the gradient op's name
  int gates;                // G
  std::initializer_list<const char*> forward_labels;   // inputs of the forward op
  std::initializer_list<const char*> gradient_labels;  // inputs of the gradient op
};

const CellTraits& traits_of(const CellOptions& options);
bool is_bidirectional(const CellOptions& options);

// The options object of a call: one of the three option types, else TypeError naming `where`.
CellOptions options_from(const py::handle& options, const char* where);

void bind_cell_options(py::module_& m);

}  // namespace rnngraph::bind
