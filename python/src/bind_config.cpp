#include <pybind11/pybind11.h>

#include "rnngraph/threads.hpp"

namespace py = pybind11;

namespace rnngraph::bind {

void bind_config(py::module_& m) {
  m.def(
      "blas_info",
      [] {
        const BlasInfo info = blas_info();
        py::dict d;
        d["library"] = info.library;
        d["config"] = info.config;
        d["core"] = info.core;
        d["num_threads"] = info.num_threads;
        return d;
      },
      "The linked BLAS: library, build config, detected core and thread count.");
  m.def("set_num_threads", &set_num_threads, py::arg("n"), "Threads used by rnngraph's BLAS.");
  m.def("get_num_threads", &get_num_threads, "Threads used by rnngraph's BLAS.");
}

}  // namespace rnngraph::bind
