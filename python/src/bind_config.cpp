#include <pybind11/pybind11.h>

#include <string>

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
  m.def(
      "cpu_supports",
      [](const std::string& level) {
        __builtin_cpu_init();
        if (level == "avx2") {
          return bool(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("bmi2"));
        }
        if (level == "avx512") {
          return bool(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"));
        }
        throw py::value_error("cpu_supports: unknown level '" + level + "'");
      },
      py::arg("level"), "Whether this CPU runs the given kernel level (avx2, avx512).");
#if defined(__AVX512F__)
  m.attr("kernel_level") = "avx512";
#elif defined(__AVX2__)
  m.attr("kernel_level") = "avx2";
#else
  m.attr("kernel_level") = "baseline";
#endif
  m.def("set_num_threads", &set_num_threads, py::arg("n"), "Threads used by rnngraph's BLAS.");
  m.def("get_num_threads", &get_num_threads, "Threads used by rnngraph's BLAS.");
}

}  // namespace rnngraph::bind
