// Bindings for the three RNN cells: check every array against the SPEC.md layouts,
// allocate the outputs, release the GIL and call one core function.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <type_traits>

#include "array_args.hpp"
#include "rnngraph/gru.hpp"
#include "rnngraph/lstm.hpp"
#include "rnngraph/packed_weights.hpp"
#include "rnngraph/single_gate_rnn.hpp"

namespace rnngraph::bind {
namespace {

enum class Cell { singleGate, lstm, gru };

struct CellInfo {
  const char* forward_name;
  const char* gradient_name;
  int gates;
};

CellInfo info(Cell cell) {
  switch (cell) {
    case Cell::singleGate: return {"singleGateRNN", "singleGateRNNGradients", 1};
    case Cell::lstm: return {"LSTM", "LSTMGradients", 4};
    case Cell::gru: return {"GRU", "GRUGradients", 3};
  }
  throw std::logic_error("unknown cell");
}

Cell parse_cell(const std::string& name) {
  if (name == "singleGateRNN") return Cell::singleGate;
  if (name == "LSTM") return Cell::lstm;
  if (name == "GRU") return Cell::gru;
  throw py::value_error("unknown cell '" + name + "' (expected singleGateRNN, LSTM or GRU)");
}

// A forward op's recurrentWeight and inputWeight packed once (Graph constants): made by
// pack_forward_weights, passed to rnn_forward as packed=.
struct PackedWeights {
  Cell cell;
  std::unique_ptr<PackedForwardWeights<float>> f32;
  std::unique_ptr<PackedForwardWeights<double>> f64;

  template <class S>
  const PackedForwardWeights<S>* get() const {
    if constexpr (std::is_same_v<S, float>) return f32.get();
    else return f64.get();
  }
};

Activation act(const std::string& op, const py::dict& d, const char* key, Activation fallback) {
  if (!d.contains(key)) return fallback;
  py::object value = d[key];
  const std::string label = op + ": " + key;
  if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
    throw py::type_error(label + ": expected an activation 0..4, got " + std::string(py::repr(value)));
  }
  return activation_from_int(value.cast<int>(), label.c_str());
}

SingleGateRNNOptions single_gate_options(const py::dict& d) {
  const std::string op = "singleGateRNN";
  SingleGateRNNOptions o;
  o.reverse = flag(d, "reverse");
  o.bidirectional = flag(d, "bidirectional");
  o.activation = act(op, d, "activation", o.activation);
  return o;
}

LSTMOptions lstm_options(const py::dict& d) {
  const std::string op = "LSTM";
  LSTMOptions o;
  o.reverse = flag(d, "reverse");
  o.bidirectional = flag(d, "bidirectional");
  o.forgetGateLast = flag(d, "forgetGateLast");
  o.inputGateActivation = act(op, d, "inputGateActivation", o.inputGateActivation);
  o.forgetGateActivation = act(op, d, "forgetGateActivation", o.forgetGateActivation);
  o.cellGateActivation = act(op, d, "cellGateActivation", o.cellGateActivation);
  o.outputGateActivation = act(op, d, "outputGateActivation", o.outputGateActivation);
  o.activation = act(op, d, "activation", o.activation);
  return o;
}

GRUOptions gru_options(const py::dict& d) {
  const std::string op = "GRU";
  GRUOptions o;
  o.reverse = flag(d, "reverse");
  o.bidirectional = flag(d, "bidirectional");
  o.resetGateFirst = flag(d, "resetGateFirst");
  o.resetAfter = flag(d, "resetAfter");
  o.flipZ = flag(d, "flipZ");
  o.updateGateActivation = act(op, d, "updateGateActivation", o.updateGateActivation);
  o.resetGateActivation = act(op, d, "resetGateActivation", o.resetGateActivation);
  o.outputGateActivation = act(op, d, "outputGateActivation", o.outputGateActivation);
  return o;
}

// A descriptor's options parsed once: the Graph parses them when it builds an op and passes
// the result on every run (a dict is parsed on each call).
struct CellOptions {
  Cell cell;
  bool bidirectional = false;
  SingleGateRNNOptions single_gate;
  LSTMOptions lstm;
  GRUOptions gru;
};

CellOptions parse_options(Cell cell, const py::dict& d) {
  CellOptions o;
  o.cell = cell;
  o.bidirectional = flag(d, "bidirectional");
  switch (cell) {
    case Cell::singleGate: o.single_gate = single_gate_options(d); break;
    case Cell::lstm: o.lstm = lstm_options(d); break;
    case Cell::gru: o.gru = gru_options(d); break;
  }
  return o;
}

// options: a CellOptions made for this cell, or a dict of descriptor properties.
CellOptions options_for(Cell cell, const py::object& options) {
  if (py::isinstance<CellOptions>(options)) {
    const auto& o = options.cast<const CellOptions&>();
    if (o.cell != cell) throw py::value_error("options: parsed for another cell");
    return o;
  }
  if (!py::isinstance<py::dict>(options)) {
    throw py::type_error("options: expected a dict of descriptor properties or CellOptions");
  }
  return parse_options(cell, py::reinterpret_borrow<py::dict>(options));
}

// Gates, directions and H from the options and recurrentWeight (rank checked).
RNNShape weight_sizes(const CellOptions& opts, const std::string& op, const py::object& recurrentWeight) {
  RNNShape s;
  s.gates = info(opts.cell).gates;
  s.bidirectional = opts.bidirectional;
  py::array R = as_array(recurrentWeight, op + ": recurrentWeight");
  if (R.ndim() != (s.bidirectional ? 3 : 2)) {
    throw py::value_error(op + ": recurrentWeight: expected rank " + std::to_string(s.bidirectional ? 3 : 2) +
                          ", got shape " + shape_str(shape_of(R)));
  }
  s.H = R.shape(R.ndim() - 1);
  if (s.H <= 0) throw py::value_error(op + ": recurrentWeight: hidden size H must be positive");
  return s;
}

// Sizes from source and recurrentWeight, checked against each other.
RNNShape infer_shape(const CellOptions& opts, const std::string& op, const py::object& source,
                     const py::object& recurrentWeight, bool has_input_weight) {
  RNNShape s = weight_sizes(opts, op, recurrentWeight);
  s.has_input_weight = has_input_weight;
  py::array src = as_array(source, op + ": source");
  if (src.ndim() != 3) {
    throw py::value_error(op + ": source: expected rank 3 [T, N, I], got shape " + shape_str(shape_of(src)));
  }
  s.T = src.shape(0);
  s.N = src.shape(1);
  s.I = has_input_weight ? src.shape(2) : 0;
  if (has_input_weight && s.I <= 0) throw py::value_error(op + ": source: input size I must be positive");
  return s;
}

Shape weight_shape(const RNNShape& s) {
  return s.bidirectional ? Shape{2, s.GH(), s.H} : Shape{s.GH(), s.H};
}

void reject_unused(Cell cell, const std::string& op, const py::object& initCell,
                   const py::object& peephole, const py::object& secondaryBias,
                   const py::object& cellGradient) {
  if (cell != Cell::lstm && !initCell.is_none()) throw py::value_error(op + ": initCell is an LSTM input");
  if (cell != Cell::lstm && !peephole.is_none()) throw py::value_error(op + ": peephole is an LSTM input");
  if (cell != Cell::lstm && !cellGradient.is_none()) throw py::value_error(op + ": cellGradient is an LSTM input");
  if (cell != Cell::gru && !secondaryBias.is_none()) throw py::value_error(op + ": secondaryBias is a GRU input");
}

// Overloads picking the core function by options type.
template <class S> void forward(const SingleGateRNNOptions& o, const RNNShape& s, const ForwardArgs<S>& a) { single_gate_rnn_forward<S>(o, s, a); }
template <class S> void forward(const LSTMOptions& o, const RNNShape& s, const ForwardArgs<S>& a) { lstm_forward<S>(o, s, a); }
template <class S> void forward(const GRUOptions& o, const RNNShape& s, const ForwardArgs<S>& a) { gru_forward<S>(o, s, a); }
template <class S> void gradients(const SingleGateRNNOptions& o, const RNNShape& s, const GradientArgs<S>& a) { single_gate_rnn_gradients<S>(o, s, a); }
template <class S> void gradients(const LSTMOptions& o, const RNNShape& s, const GradientArgs<S>& a) { lstm_gradients<S>(o, s, a); }
template <class S> void gradients(const GRUOptions& o, const RNNShape& s, const GradientArgs<S>& a) { gru_gradients<S>(o, s, a); }

// Run the kernel for the cell's options without the GIL.
template <class Fn>
void run_without_gil(const CellOptions& opts, Fn&& fn) {
  py::gil_scoped_release release;
  switch (opts.cell) {
    case Cell::singleGate: fn(opts.single_gate); break;
    case Cell::lstm: fn(opts.lstm); break;
    case Cell::gru: fn(opts.gru); break;
  }
}

template <class S>
py::tuple forward_typed(const CellOptions& opts, const py::object& source,
                        const py::object& recurrentWeight, const py::object& inputWeight,
                        const py::object& bias, const py::object& initState,
                        const py::object& initCell, const py::object& mask,
                        const py::object& peephole, const py::object& secondaryBias, bool training,
                        const PackedWeights* packed) {
  const Cell cell = opts.cell;
  const std::string op = info(cell).forward_name;
  reject_unused(cell, op, initCell, peephole, secondaryBias, py::none());
  const RNNShape s = infer_shape(opts, op, source, recurrentWeight, !inputWeight.is_none());
  const Index T = s.T, N = s.N, DH = s.DH();
  ForwardArgs<S> a;
  a.source = input<S>(source, op, "source", {T, N, s.source_cols()}, true);
  a.recurrentWeight = input<S>(recurrentWeight, op, "recurrentWeight", weight_shape(s), true);
  a.inputWeight = input<S>(inputWeight, op, "inputWeight", {s.DGH(), s.I});
  a.bias = input<S>(bias, op, "bias", {s.DGH()});
  a.initState = input<S>(initState, op, "initState", {N, DH});
  a.initCell = input<S>(initCell, op, "initCell", {N, DH});
  a.mask = input<S>(mask, op, "mask", {T, N, DH});
  a.peephole = input<S>(peephole, op, "peephole", {s.D() * 4 * s.H});
  a.secondaryBias = input<S>(secondaryBias, op, "secondaryBias", {DH});
  if (packed) {
    a.packed = packed->get<S>();
    if (packed->cell != cell || !a.packed || !a.packed->matches(s)) {
      throw py::value_error(op + ": packed: weights packed for another op, shape or dtype");
    }
  }

  auto h = output<S>({T, N, DH});
  a.output = h.mutable_data();
  py::object c = py::none(), z = py::none();
  if (cell == Cell::lstm) {
    auto cell_out = output<S>({T, N, DH});
    a.cellOutput = cell_out.mutable_data();
    c = cell_out;
  }
  if (training) {
    auto z_out = output<S>({T, N, s.DGH()});
    a.zState = z_out.mutable_data();
    z = z_out;
  }
  run_without_gil(opts, [&](const auto& options) { forward(options, s, a); });
  return py::make_tuple(h, c, z);
}

template <class S>
py::dict gradients_typed(const CellOptions& opts, const py::object& source,
                         const py::object& recurrentWeight, const py::object& sourceGradient,
                         const py::object& zState, const py::object& outputFwd,
                         const py::object& cellOutputFwd, const py::object& stateGradient,
                         const py::object& cellGradient, const py::object& inputWeight,
                         const py::object& bias, const py::object& initState,
                         const py::object& initCell, const py::object& mask,
                         const py::object& peephole, const py::object& secondaryBias) {
  const Cell cell = opts.cell;
  const std::string op = info(cell).gradient_name;
  reject_unused(cell, op, initCell, peephole, secondaryBias, cellGradient);
  const RNNShape s = infer_shape(opts, op, source, recurrentWeight, !inputWeight.is_none());
  const Index T = s.T, N = s.N, DH = s.DH();
  GradientArgs<S> a;
  a.source = input<S>(source, op, "source", {T, N, s.source_cols()}, true);
  a.recurrentWeight = input<S>(recurrentWeight, op, "recurrentWeight", weight_shape(s), true);
  a.sourceGradient = input<S>(sourceGradient, op, "sourceGradient", {T, N, DH}, true);
  a.zState = input<S>(zState, op, "zState", {T, N, s.DGH()}, true);
  a.outputFwd = input<S>(outputFwd, op, "outputFwd", {T, N, DH}, cell == Cell::gru);
  a.cellOutputFwd = input<S>(cellOutputFwd, op, "cellOutputFwd", {T, N, DH}, cell == Cell::lstm);
  a.stateGradient = input<S>(stateGradient, op, "stateGradient", {N, DH});
  a.cellGradient = input<S>(cellGradient, op, "cellGradient", {N, DH});
  a.inputWeight = input<S>(inputWeight, op, "inputWeight", {s.DGH(), s.I});
  a.bias = input<S>(bias, op, "bias", {s.DGH()});
  a.initState = input<S>(initState, op, "initState", {N, DH});
  a.initCell = input<S>(initCell, op, "initCell", {N, DH});
  a.mask = input<S>(mask, op, "mask", {T, N, DH});
  a.peephole = input<S>(peephole, op, "peephole", {s.D() * 4 * s.H});
  a.secondaryBias = input<S>(secondaryBias, op, "secondaryBias", {DH});

  py::dict grads;
  auto make = [&](const char* label, const Shape& shape, S*& target) {
    auto g = output<S>(shape);
    target = g.mutable_data();
    grads[label] = g;
  };
  make("source", {T, N, s.source_cols()}, a.sourceGrad);
  make("recurrentWeight", weight_shape(s), a.recurrentWeightGrad);
  if (a.inputWeight) make("inputWeight", {s.DGH(), s.I}, a.inputWeightGrad);
  if (a.bias) make("bias", {s.DGH()}, a.biasGrad);
  if (a.peephole) make("peephole", {s.D() * 4 * s.H}, a.peepholeGrad);
  if (a.initState) make("initState", {N, DH}, a.initStateGrad);
  if (a.initCell) make("initCell", {N, DH}, a.initCellGrad);
  if (a.secondaryBias) make("secondaryBias", {DH}, a.secondaryBiasGrad);
  run_without_gil(opts, [&](const auto& options) { gradients(options, s, a); });
  return grads;
}

// The source's dtype picks the instantiation; every other array must match it.
template <class Fn>
auto dispatch(const std::string& op, const py::object& source, Fn&& fn) {
  py::array src = as_array(source, op + ": source");
  if (src.dtype().is(py::dtype::of<float>())) return fn(float{});
  if (src.dtype().is(py::dtype::of<double>())) return fn(double{});
  throw py::type_error(op + ": source: expected dtype float32 or float64, got " +
                       std::string(py::str(src.dtype())));
}

}  // namespace

void bind_rnn(py::module_& m) {
  py::class_<CellOptions>(m, "CellOptions", "A descriptor's options, parsed once for many calls.")
      .def(py::init([](const std::string& cell_name, const py::dict& options) {
             return parse_options(parse_cell(cell_name), options);
           }),
           py::arg("cell"), py::arg("options"));
  py::class_<PackedWeights>(m, "PackedWeights",
                            "A forward op's weights packed for its kernels (from pack_forward_weights).");
  m.def(
      "pack_forward_weights",
      [](const std::string& cell_name, const py::object& options, const py::object& recurrentWeight,
         const py::object& inputWeight) {
        const Cell cell = parse_cell(cell_name);
        const CellOptions opts = options_for(cell, options);
        const std::string op = info(cell).forward_name;
        auto result = std::make_unique<PackedWeights>();
        result->cell = cell;
        dispatch(op, recurrentWeight, [&](auto tag) {
          using S = decltype(tag);
          RNNShape s = weight_sizes(opts, op, recurrentWeight);
          s.has_input_weight = !inputWeight.is_none();
          if (s.has_input_weight) {
            py::array W = as_array(inputWeight, op + ": inputWeight");
            s.I = W.ndim() == 2 ? W.shape(1) : 0;
          }
          const S* r = input<S>(recurrentWeight, op, "recurrentWeight", weight_shape(s), true);
          const S* w = input<S>(inputWeight, op, "inputWeight", {s.DGH(), s.I});
          auto packed = std::make_unique<PackedForwardWeights<S>>();
          {
            py::gil_scoped_release release;
            pack_forward_weights(s.D(), s.gates, s.H, s.I, r, w, *packed);
          }
          if constexpr (std::is_same_v<S, float>) result->f32 = std::move(packed);
          else result->f64 = std::move(packed);
          return 0;
        });
        return result;
      },
      py::arg("cell"), py::arg("options"), py::arg("recurrentWeight"),
      py::arg("inputWeight") = py::none(),
      "Pack a forward op's recurrentWeight (and inputWeight) once for many rnn_forward calls.");

  m.def(
      "rnn_forward",
      [](const std::string& cell_name, const py::object& options, const py::object& source,
         const py::object& recurrentWeight, const py::object& inputWeight, const py::object& bias,
         const py::object& initState, const py::object& initCell, const py::object& mask,
         const py::object& peephole, const py::object& secondaryBias, bool training,
         const PackedWeights* packed) {
        const Cell cell = parse_cell(cell_name);
        const CellOptions opts = options_for(cell, options);
        return dispatch(info(cell).forward_name, source, [&](auto tag) {
          using S = decltype(tag);
          return forward_typed<S>(opts, source, recurrentWeight, inputWeight, bias,
                                  initState, initCell, mask, peephole, secondaryBias, training,
                                  packed);
        });
      },
      py::arg("cell"), py::arg("options"), py::arg("source"), py::arg("recurrentWeight"),
      py::arg("inputWeight") = py::none(), py::arg("bias") = py::none(),
      py::arg("initState") = py::none(), py::arg("initCell") = py::none(),
      py::arg("mask") = py::none(), py::arg("peephole") = py::none(),
      py::arg("secondaryBias") = py::none(), py::arg("training") = false,
      py::arg("packed") = nullptr,
      "Forward pass of one RNN op on dense arrays in SPEC.md layouts (packed: the same\n"
      "recurrentWeight and inputWeight from pack_forward_weights, used in their place).\n"
      "Returns (h [T,N,D*H], c [T,N,D*H] or None, zState [T,N,D*G*H] or None).");
  m.def(
      "rnn_gradients",
      [](const std::string& cell_name, const py::object& options, const py::object& source,
         const py::object& recurrentWeight, const py::object& sourceGradient,
         const py::object& zState, const py::object& outputFwd, const py::object& cellOutputFwd,
         const py::object& stateGradient, const py::object& cellGradient,
         const py::object& inputWeight, const py::object& bias, const py::object& initState,
         const py::object& initCell, const py::object& mask, const py::object& peephole,
         const py::object& secondaryBias) {
        const Cell cell = parse_cell(cell_name);
        const CellOptions opts = options_for(cell, options);
        return dispatch(info(cell).gradient_name, source, [&](auto tag) {
          using S = decltype(tag);
          return gradients_typed<S>(opts, source, recurrentWeight, sourceGradient, zState,
                                    outputFwd, cellOutputFwd, stateGradient, cellGradient,
                                    inputWeight, bias, initState, initCell, mask, peephole,
                                    secondaryBias);
        });
      },
      py::arg("cell"), py::arg("options"), py::arg("source"), py::arg("recurrentWeight"),
      py::arg("sourceGradient"), py::arg("zState"), py::arg("outputFwd") = py::none(),
      py::arg("cellOutputFwd") = py::none(), py::arg("stateGradient") = py::none(),
      py::arg("cellGradient") = py::none(), py::arg("inputWeight") = py::none(),
      py::arg("bias") = py::none(), py::arg("initState") = py::none(),
      py::arg("initCell") = py::none(), py::arg("mask") = py::none(),
      py::arg("peephole") = py::none(), py::arg("secondaryBias") = py::none(),
      "Gradient op of one RNN on dense arrays in SPEC.md layouts.\n"
      "Returns {label: gradient} for source, recurrentWeight and each given optional input.");
}

}  // namespace rnngraph::bind
