// How cheap can the binding of a forward call be? A probe, not rnngraph's API: one LSTM
// forward call on state prepared once (shape, options, packed weights), bound two ways:
// through pybind11's dispatcher (`call`) and through a raw METH_FASTCALL function
// (`fast_call`). The arrays are not checked (the probe measures the floor of a binding, not a
// safe one). benchmarks/lean_binding.py builds it against the core's static library
// (compiled_call.core_library) and times it beside Graph.run and rnn_forward.
#include <Python.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>

#include "rnngraph/lstm.hpp"
#include "rnngraph/packed_weights.hpp"

namespace py = pybind11;
using rnngraph::Index;

struct Prepared {
  rnngraph::RNNShape s;
  rnngraph::LSTMOptions o;
  std::shared_ptr<const rnngraph::PackedForwardWeights<float>> packed;
  py::array_t<float> R, W, b;
};

static py::array_t<float> run(Prepared& p, const float* x, const float* h0, const float* c0) {
  py::array_t<float> h({p.s.T, p.s.N, p.s.H}), c({p.s.T, p.s.N, p.s.H});
  rnngraph::ForwardArgs<float> a;
  a.packed = p.packed.get();
  a.source = x;
  a.recurrentWeight = p.R.data();
  a.inputWeight = p.W.data();
  a.bias = p.b.data();
  a.initState = h0;
  a.initCell = c0;
  a.output = h.mutable_data();
  a.cellOutput = c.mutable_data();
  {
    py::gil_scoped_release release;
    rnngraph::lstm_forward<float>(p.o, p.s, a);
  }
  return h;
}

static const float* data_of(PyObject* o) {
  return static_cast<const float*>(py::reinterpret_borrow<py::array>(o).data());
}

static PyObject* fast_call(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "fast_call(prepared, x, h0, c0)");
    return nullptr;
  }
  try {
    Prepared& p = py::reinterpret_borrow<py::object>(args[0]).cast<Prepared&>();
    return run(p, data_of(args[1]), data_of(args[2]), data_of(args[3])).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
    return nullptr;
  }
}

static PyMethodDef fast_def = {"fast_call", reinterpret_cast<PyCFunction>(fast_call), METH_FASTCALL,
                               "raw call"};

PYBIND11_MODULE(lean_binding, m) {
  py::class_<Prepared>(m, "Prepared");
  m.def("prepare", [](py::array_t<float> R, py::array_t<float> W, py::array_t<float> b, Index T,
                      Index N, Index I, Index H) {
    auto p = std::make_unique<Prepared>();
    p->s.T = T;
    p->s.N = N;
    p->s.I = I;
    p->s.H = H;
    p->s.gates = 4;
    p->s.has_input_weight = true;
    p->R = R;
    p->W = W;
    p->b = b;
    p->packed = rnngraph::pack_forward_weights<float>(1, 4, H, I, R.data(), W.data());
    return p;
  });
  m.def("call",
        [](Prepared& p, const py::array_t<float>& x, const py::array_t<float>& h0,
           const py::array_t<float>& c0) { return run(p, x.data(), h0.data(), c0.data()); });
  m.add_object("fast_call", py::reinterpret_steal<py::object>(PyCFunction_New(&fast_def, nullptr)));
}
