// What the ops around the recurrent ones take from the core: _core.matmul, a 2-D product
// through rnngraph's gemm (rnngraph/matmul.hpp) for Graph.matrixMultiplication on floats
// (each operand C-contiguous or the transpose of a C-contiguous array: a transposed view is
// read as it is; anything else is refused here and made dense by the caller), and
// _core.adam_update, Graph.adam's fused step; both return arrays on rnngraph's kept memory
// (output_pool.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <string>

#include "array_args.hpp"
#include "call_arguments.hpp"
#include "output_pool.hpp"
#include "rnngraph/matmul.hpp"
#include "rnngraph/optimizers.hpp"

namespace py = pybind11;

namespace rnngraph::bind {
namespace {

struct Operand {
  bool transposed = false;
  Index rows = 0, cols = 0, ld = 0;
};

// How gemm reads a 2-D array: directly (row-major), or as the transpose of its memory (an
// F-contiguous array, or a transposed view of rows padded apart).
Operand read_as_matrix(const py::array& x, const char* label) {
  const auto where = [&] { return std::string("matmul: ") + label; };
  if (x.ndim() != 2) throw py::value_error(where() + ": expected rank 2");
  if (!(x.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    throw py::value_error(where() + ": expected an aligned array");
  Operand o{false, x.shape(0), x.shape(1), 0};
  const auto item = static_cast<py::ssize_t>(x.itemsize());
  if (x.flags() & py::array::c_style) {
    o.ld = std::max<Index>(1, o.cols);
  } else if (x.strides(0) == item && x.strides(1) % item == 0 &&
             x.strides(1) >= item * x.shape(0)) {
    o.transposed = true;
    o.ld = std::max<Index>(1, x.strides(1) / item);
  } else {
    throw py::value_error(where() + ": not a dense or transposed matrix");
  }
  return o;
}

template <class S>
py::array_t<S> product(const py::array& a, const py::array& b) {
  if (!elements_are<S>(b)) throw py::type_error("matmul: a and b differ in dtype");
  const Operand x = read_as_matrix(a, "a"), y = read_as_matrix(b, "b");
  if (x.cols != y.rows) throw py::value_error("matmul: inner sizes differ");
  py::array_t<S> c = pooled_array<S>({x.rows, y.cols});
  const S* pa = static_cast<const S*>(a.data());
  const S* pb = static_cast<const S*>(b.data());
  S* pc = c.mutable_data();
  {
    py::gil_scoped_release release;
    matmul<S>(x.transposed, y.transposed, x.rows, y.cols, x.cols, pa, x.ld, pb, y.ld, pc,
              std::max<Index>(1, y.cols));
  }
  return c;
}

template <class S>
py::tuple adam_of(const py::array& values, const py::object& momentum, const py::object& velocity,
                  const py::object& max_velocity, const py::object& gradient, double lr,
                  double beta1, double beta2, double epsilon) {
  const Shape shape = shape_of(values);
  const char* op = "adam_update";
  AdamArrays<S> a{};
  a.values = input<S>(values, op, "values", shape, true);
  a.momentum = input<S>(momentum, op, "momentum", shape, true);
  a.velocity = input<S>(velocity, op, "velocity", shape, true);
  a.gradient = input<S>(gradient, op, "gradient", shape, true);
  a.max_velocity = input<S>(max_velocity, op, "maximumVelocity", shape);
  py::array_t<S> x = output<S>(shape), m = output<S>(shape), v = output<S>(shape);
  a.new_values = x.mutable_data();
  a.new_momentum = m.mutable_data();
  a.new_velocity = v.mutable_data();
  py::array_t<S> vmax;
  if (a.max_velocity) {
    vmax = output<S>(shape);
    a.new_max_velocity = vmax.mutable_data();
  }
  {
    py::gil_scoped_release release;
    adam_update<S>(static_cast<Index>(values.size()), a, S(lr), S(beta1), S(beta2), S(epsilon));
  }
  if (!a.max_velocity) return py::make_tuple(x, m, v);
  return py::make_tuple(x, m, v, vmax);
}

}  // namespace

void bind_graph_ops(py::module_& m) {
  m.def(
      "adam_update",
      [](const py::object& values, const py::object& momentum, const py::object& velocity,
         const py::object& maximumVelocity, const py::object& gradient, double lr, double beta1,
         double beta2, double epsilon) -> py::tuple {
        return dispatch("adam_update", "values", values, [&](auto scalar) {
          using S = decltype(scalar);
          return adam_of<S>(py::reinterpret_borrow<py::array>(values), momentum, velocity,
                            maximumVelocity, gradient, lr, beta1, beta2, epsilon);
        });
      },
      py::arg("values"), py::arg("momentum"), py::arg("velocity"), py::arg("maximumVelocity"),
      py::arg("gradient"), py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("epsilon"),
      "One fused Adam step (rnngraph/optimizers.hpp) on rnngraph's threads: (values, momentum, "
      "velocity[, maximumVelocity]) on kept memory.");
  m.def(
      "matmul",
      [](const py::object& a, const py::object& b) -> py::array {
        const py::array right = as_array(b, "matmul: b");
        return dispatch("matmul", "a", a, [&](auto scalar) -> py::array {
          return product<decltype(scalar)>(py::reinterpret_borrow<py::array>(a), right);
        });
      },
      py::arg("a"), py::arg("b"),
      "a [m, k] · b [k, n] on rnngraph's threads (each C-contiguous or a transposed view).");
}

}  // namespace rnngraph::bind
