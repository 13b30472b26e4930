#include "cell_options.hpp"

#include <pybind11/stl.h>

namespace rnngraph::bind {
namespace {

const CellTraits kSingleGate{
    "singleGateRNN",
    "singleGateRNNGradients",
    1,
    {"source", "recurrentWeight", "inputWeight", "bias", "initState", "mask"},
    {"source", "recurrentWeight", "sourceGradient", "zState", "stateGradient", "inputWeight",
     "bias", "initState", "mask"}};
const CellTraits kLSTM{
    "LSTM",
    "LSTMGradients",
    4,
    {"source", "recurrentWeight", "inputWeight", "bias", "initState", "initCell", "mask",
     "peephole"},
    {"source", "recurrentWeight", "sourceGradient", "zState", "cellOutputFwd", "stateGradient",
     "cellGradient", "inputWeight", "bias", "initState", "initCell", "mask", "peephole"}};
const CellTraits kGRU{
    "GRU",
    "GRUGradients",
    3,
    {"source", "recurrentWeight", "inputWeight", "bias", "initState", "mask", "secondaryBias"},
    {"source", "recurrentWeight", "sourceGradient", "zState", "outputFwd", "stateGradient",
     "inputWeight", "bias", "initState", "mask", "secondaryBias"}};

const CellTraits& traits(const SingleGateRNNOptions&) { return kSingleGate; }
const CellTraits& traits(const LSTMOptions&) { return kLSTM; }
const CellTraits& traits(const GRUOptions&) { return kGRU; }

// An activation given as an int (an RNNActivation is one): ValueError outside 0..4.
Activation activation(int value, const std::string& where) {
  return activation_from_int(value, where.c_str());
}

template <class Options>
py::class_<Options> options_class(py::module_& m, const char* name, const char* doc) {
  // module_local: each kernel level's module (_core, _core_avx2, ...) has its own class.
  py::class_<Options> c(m, name, doc, py::module_local());
  const CellTraits& t = traits(Options{});
  c.attr("op") = t.op;
  c.attr("gradient_op") = t.gradient_op;
  c.attr("gates") = t.gates;
  c.def_readonly("reverse", &Options::reverse);
  c.def_readonly("bidirectional", &Options::bidirectional);
  return c;
}

std::string flag_text(bool v) { return v ? "True" : "False"; }

}  // namespace

const CellTraits& traits_of(const CellOptions& options) {
  return std::visit([](const auto& o) -> const CellTraits& { return traits(o); }, options);
}

bool is_bidirectional(const CellOptions& options) {
  return std::visit([](const auto& o) { return o.bidirectional; }, options);
}

CellOptions options_from(const py::handle& options, const std::string& where) {
  if (py::isinstance<SingleGateRNNOptions>(options)) return options.cast<SingleGateRNNOptions>();
  if (py::isinstance<LSTMOptions>(options)) return options.cast<LSTMOptions>();
  if (py::isinstance<GRUOptions>(options)) return options.cast<GRUOptions>();
  throw py::type_error(where + ": expected SingleGateRNNOptions, LSTMOptions or GRUOptions, got " +
                       std::string(py::str(options.get_type().attr("__name__"))));
}

void bind_cell_options(py::module_& m) {
  using py::arg;
  options_class<SingleGateRNNOptions>(m, "SingleGateRNNOptions",
                                      "singleGateRNN's descriptor, parsed.")
      .def(py::init([](bool reverse, bool bidirectional, int act) {
             SingleGateRNNOptions o;
             o.reverse = reverse;
             o.bidirectional = bidirectional;
             o.activation = activation(act, "singleGateRNN: activation");
             return o;
           }),
           py::kw_only(), arg("reverse").noconvert() = false,
           arg("bidirectional").noconvert() = false,
           arg("activation").noconvert() = static_cast<int>(Activation::relu))
      .def_property_readonly(
          "activation",
          [](const SingleGateRNNOptions& o) { return static_cast<int>(o.activation); })
      .def("__repr__", [](const SingleGateRNNOptions& o) {
        return "SingleGateRNNOptions(reverse=" + flag_text(o.reverse) +
               ", bidirectional=" + flag_text(o.bidirectional) +
               ", activation=" + std::to_string(static_cast<int>(o.activation)) + ")";
      });

  options_class<LSTMOptions>(m, "LSTMOptions", "LSTM's descriptor, parsed.")
      .def(py::init([](bool reverse, bool bidirectional, bool forgetGateLast, int i, int f, int z,
                       int out, int act) {
             LSTMOptions o;
             o.reverse = reverse;
             o.bidirectional = bidirectional;
             o.forgetGateLast = forgetGateLast;
             o.inputGateActivation = activation(i, "LSTM: inputGateActivation");
             o.forgetGateActivation = activation(f, "LSTM: forgetGateActivation");
             o.cellGateActivation = activation(z, "LSTM: cellGateActivation");
             o.outputGateActivation = activation(out, "LSTM: outputGateActivation");
             o.activation = activation(act, "LSTM: activation");
             return o;
           }),
           py::kw_only(), arg("reverse").noconvert() = false,
           arg("bidirectional").noconvert() = false, arg("forgetGateLast").noconvert() = false,
           arg("inputGateActivation").noconvert() = static_cast<int>(Activation::sigmoid),
           arg("forgetGateActivation").noconvert() = static_cast<int>(Activation::sigmoid),
           arg("cellGateActivation").noconvert() = static_cast<int>(Activation::tanh),
           arg("outputGateActivation").noconvert() = static_cast<int>(Activation::sigmoid),
           arg("activation").noconvert() = static_cast<int>(Activation::tanh))
      .def_readonly("forgetGateLast", &LSTMOptions::forgetGateLast)
      .def("__repr__", [](const LSTMOptions& o) {
        auto a = [](Activation v) { return std::to_string(static_cast<int>(v)); };
        return "LSTMOptions(reverse=" + flag_text(o.reverse) +
               ", bidirectional=" + flag_text(o.bidirectional) +
               ", forgetGateLast=" + flag_text(o.forgetGateLast) + ", activations=[" +
               a(o.inputGateActivation) + ", " + a(o.forgetGateActivation) + ", " +
               a(o.cellGateActivation) + ", " + a(o.outputGateActivation) + ", " + a(o.activation) +
               "])";
      });

  options_class<GRUOptions>(m, "GRUOptions", "GRU's descriptor, parsed.")
      .def(py::init([](bool reverse, bool bidirectional, bool resetGateFirst, bool resetAfter,
                       bool flipZ, int z, int r, int out) {
             GRUOptions o;
             o.reverse = reverse;
             o.bidirectional = bidirectional;
             o.resetGateFirst = resetGateFirst;
             o.resetAfter = resetAfter;
             o.flipZ = flipZ;
             o.updateGateActivation = activation(z, "GRU: updateGateActivation");
             o.resetGateActivation = activation(r, "GRU: resetGateActivation");
             o.outputGateActivation = activation(out, "GRU: outputGateActivation");
             return o;
           }),
           py::kw_only(), arg("reverse").noconvert() = false,
           arg("bidirectional").noconvert() = false, arg("resetGateFirst").noconvert() = false,
           arg("resetAfter").noconvert() = false, arg("flipZ").noconvert() = false,
           arg("updateGateActivation").noconvert() = static_cast<int>(Activation::sigmoid),
           arg("resetGateActivation").noconvert() = static_cast<int>(Activation::sigmoid),
           arg("outputGateActivation").noconvert() = static_cast<int>(Activation::tanh))
      .def_readonly("resetGateFirst", &GRUOptions::resetGateFirst)
      .def_readonly("resetAfter", &GRUOptions::resetAfter)
      .def_readonly("flipZ", &GRUOptions::flipZ)
      .def("__repr__", [](const GRUOptions& o) {
        auto a = [](Activation v) { return std::to_string(static_cast<int>(v)); };
        return "GRUOptions(reverse=" + flag_text(o.reverse) +
               ", bidirectional=" + flag_text(o.bidirectional) +
               ", resetGateFirst=" + flag_text(o.resetGateFirst) +
               ", resetAfter=" + flag_text(o.resetAfter) + ", flipZ=" + flag_text(o.flipZ) +
               ", activations=[" + a(o.updateGateActivation) + ", " + a(o.resetGateActivation) +
               ", " + a(o.outputGateActivation) + "])";
      });
}

}  // namespace rnngraph::bind
