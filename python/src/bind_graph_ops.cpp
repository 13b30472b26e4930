// What the ops around the recurrent ones take from the core: _core.matmul, a 2-D product
// through rnngraph's gemm (rnngraph/matmul.hpp) for Graph.matrixMultiplication on floats
// (each operand C-contiguous or the transpose of a C-contiguous array: a transposed view is
// read as it is; anything else is refused here and made dense by the caller), and
// _core.adam_update, Graph.adam's fused step; both return arrays on rnngraph's kept memory
// (output_pool.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

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

// How gemm reads a 2-D array: directly (row-major) or as the transpose of its memory.
Operand read_as_matrix(const py::array& x, const char* label) {
  if (x.ndim() != 2) throw py::value_error(std::string("matmul: ") + label + ": expected rank 2");
  Operand o{false, x.shape(0), x.shape(1), 0};
  const auto item = static_cast<py::ssize_t>(x.itemsize());
  if (x.flags() & py::array::c_style) {
    o.ld = std::max<Index>(1, o.cols);
  } else if (x.flags() & py::array::f_style) {
    o.transposed = true;
    o.ld = std::max<Index>(1, o.rows);
  } else if (x.strides(0) == item && x.strides(1) >= item * x.shape(0) &&
             x.strides(1) % item == 0) {
    o.transposed = true;  // a transposed view of rows padded apart
    o.ld = x.strides(1) / item;
  } else {
    throw py::value_error(std::string("matmul: ") + label + ": not a dense or transposed matrix");
  }
  return o;
}

template <class S>
py::array_t<S> product(const py::array& a, const py::array& b) {
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

// A C-contiguous array of S shaped like `like`, else a ValueError naming `label`.
template <class S>
const S* same_layout(const py::array& x, const py::array& like, const char* label) {
  if (!x.dtype().is(py::dtype::of<S>()) || !(x.flags() & py::array::c_style) ||
      x.ndim() != like.ndim() || !std::equal(x.shape(), x.shape() + x.ndim(), like.shape())) {
    throw py::value_error(std::string("adam_update: ") + label +
                          ": expected a C-contiguous array like values");
  }
  return static_cast<const S*>(x.data());
}

template <class S>
py::tuple adam_of(const py::array& values, const py::array& momentum, const py::array& velocity,
                  const py::object& max_velocity, const py::array& gradient, double lr,
                  double beta1, double beta2, double epsilon) {
  std::vector<py::ssize_t> shape(values.shape(), values.shape() + values.ndim());
  AdamArrays<S> a{};
  a.values = same_layout<S>(values, values, "values");
  a.momentum = same_layout<S>(momentum, values, "momentum");
  a.velocity = same_layout<S>(velocity, values, "velocity");
  a.gradient = same_layout<S>(gradient, values, "gradient");
  py::array_t<S> x = pooled_array<S>(shape), m = pooled_array<S>(shape), v = pooled_array<S>(shape);
  a.new_values = x.mutable_data();
  a.new_momentum = m.mutable_data();
  a.new_velocity = v.mutable_data();
  py::object vmax_out = py::none();
  if (!max_velocity.is_none()) {
    const py::array kept = max_velocity.cast<py::array>();
    a.max_velocity = same_layout<S>(kept, values, "maximumVelocity");
    py::array_t<S> out = pooled_array<S>(shape);
    a.new_max_velocity = out.mutable_data();
    vmax_out = out;
  }
  {
    py::gil_scoped_release release;
    adam_update<S>(static_cast<Index>(values.size()), a, S(lr), S(beta1), S(beta2), S(epsilon));
  }
  if (vmax_out.is_none()) return py::make_tuple(x, m, v);
  return py::make_tuple(x, m, v, vmax_out);
}

}  // namespace

void bind_graph_ops(py::module_& m) {
  m.def(
      "adam_update",
      [](const py::array& values, const py::array& momentum, const py::array& velocity,
         const py::object& maximumVelocity, const py::array& gradient, double lr, double beta1,
         double beta2, double epsilon) -> py::tuple {
        if (values.dtype().is(py::dtype::of<float>()))
          return adam_of<float>(values, momentum, velocity, maximumVelocity, gradient, lr, beta1,
                                beta2, epsilon);
        if (values.dtype().is(py::dtype::of<double>()))
          return adam_of<double>(values, momentum, velocity, maximumVelocity, gradient, lr, beta1,
                                 beta2, epsilon);
        throw py::type_error("adam_update: values: expected float32 or float64");
      },
      py::arg("values"), py::arg("momentum"), py::arg("velocity"), py::arg("maximumVelocity"),
      py::arg("gradient"), py::arg("lr"), py::arg("beta1"), py::arg("beta2"), py::arg("epsilon"),
      "One fused Adam step (rnngraph/optimizers.hpp) on rnngraph's threads: (values, momentum, "
      "velocity[, maximumVelocity]) on kept memory.");
  m.def(
      "matmul",
      [](const py::array& a, const py::array& b) -> py::array {
        if (!a.dtype().is(b.dtype())) throw py::type_error("matmul: a and b differ in dtype");
        if (a.dtype().is(py::dtype::of<float>())) return product<float>(a, b);
        if (a.dtype().is(py::dtype::of<double>())) return product<double>(a, b);
        throw py::type_error("matmul: expected float32 or float64");
      },
      py::arg("a"), py::arg("b"),
      "a [m, k] · b [k, n] on rnngraph's threads (each C-contiguous or a transposed view).");
}

}  // namespace rnngraph::bind
