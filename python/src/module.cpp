// rnngraph._core: the private compiled module. Bindings only; the math lives in cpp/.
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace rnngraph::bind {
void bind_cell_options(py::module_& m);
void bind_rnn(py::module_& m);
void bind_config(py::module_& m);
void bind_graph_ops(py::module_& m);
}  // namespace rnngraph::bind

#ifndef RNNGRAPH_MODULE_NAME
#define RNNGRAPH_MODULE_NAME _core
#endif

PYBIND11_MODULE(RNNGRAPH_MODULE_NAME, m) {
  m.doc() = "rnngraph's compiled core (private: use the rnngraph package).";
  rnngraph::bind::bind_cell_options(m);
  rnngraph::bind::bind_rnn(m);
  rnngraph::bind::bind_config(m);
  rnngraph::bind::bind_graph_ops(m);
}
