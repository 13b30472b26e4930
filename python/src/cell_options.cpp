#include "cell_options.hpp"

#include "array_args.hpp"

#include <pybind11/stl.h>

#include <memory>
#include <utility>
#include <vector>

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
    // cellSequenceGradient: internal (no Swift label), dL/dc for every step, [T, N, D·H].
    {"source", "recurrentWeight", "sourceGradient", "zState", "cellOutputFwd", "stateGradient",
     "cellGradient", "cellSequenceGradient", "inputWeight", "bias", "initState", "initCell", "mask",
     "peephole"}};
const CellTraits kGRU{
    "GRU",
    "GRUGradients",
    3,
    {"source", "recurrentWeight", "inputWeight", "bias", "initState", "mask", "secondaryBias"},
    // recurrentProduct: internal (resetAfter only), hm·R_oᵀ + b2 as the forward op kept it.
    {"source", "recurrentWeight", "sourceGradient", "zState", "outputFwd", "stateGradient",
     "recurrentProduct", "inputWeight", "bias", "initState", "mask", "secondaryBias"}};

const CellTraits& traits(const SingleGateRNNOptions&) { return kSingleGate; }
const CellTraits& traits(const LSTMOptions&) { return kLSTM; }
const CellTraits& traits(const GRUOptions&) { return kGRU; }

// An activation given as an int (an RNNActivation is one), taken as 64 bits (torch's int
// arguments, NumPy's int64): ValueError outside 0..4.
using RawActivation = long long;
Activation activation(RawActivation value, const std::string& where) {
  return activation_from_int(value, where.c_str());
}

// The class of one options type: read-only properties named after the descriptor's, a repr
// that lists them, and the cell's op names and gate count as class attributes.
template <class Options>
class OptionsClass {
 public:
  OptionsClass(py::module_& m, const char* name, const char* doc)
      // module_local: each kernel level's module (_core, _core_avx2, ...) has its own class.
      : c_(m, name, doc, py::module_local()) {
    const CellTraits& t = traits(Options{});
    c_.attr("op") = t.op;
    c_.attr("gradient_op") = t.gradient_op;
    c_.attr("gates") = t.gates;
    flag("reverse", &Options::reverse);
    flag("bidirectional", &Options::bidirectional);
    c_.def("__repr__", [names = names_](const py::object& self) {
      std::string out = type_name(self) + "(";
      for (size_t i = 0; i < names->size(); ++i) {
        const char* n = (*names)[i];
        out += (i ? ", " : "") + std::string(n) + "=" + py::repr(self.attr(n)).cast<std::string>();
      }
      return out + ")";
    });
  }
  OptionsClass& flag(const char* name, bool Options::* member) {
    c_.def_readonly(name, member);
    names_->push_back(name);
    return *this;
  }
  OptionsClass& activation(const char* name, Activation Options::* member) {
    c_.def_property_readonly(name,
                             [member](const Options& o) { return static_cast<int>(o.*member); });
    names_->push_back(name);
    return *this;
  }
  template <class Init, class... Args>
  OptionsClass& init(Init&& make, Args&&... args) {
    c_.def(py::init(std::forward<Init>(make)), py::kw_only(), std::forward<Args>(args)...);
    return *this;
  }

 private:
  py::class_<Options> c_;
  std::shared_ptr<std::vector<const char*>> names_ = std::make_shared<std::vector<const char*>>();
};

}  // namespace

const CellTraits& traits_of(const CellOptions& options) {
  return std::visit([](const auto& o) -> const CellTraits& { return traits(o); }, options);
}

bool is_bidirectional(const CellOptions& options) {
  return std::visit([](const auto& o) { return o.bidirectional; }, options);
}

// Whether obj's type is exactly T's class: a pointer comparison, where py::isinstance looks
// the type up (a third of options_from's cost, callgrind).
template <class T>
bool exactly(const py::handle& obj) {
  static PyObject* const type = py::type::of<T>().ptr();
  return reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr())) == type;
}

CellOptions options_from(const py::handle& options, const char* where) {
  if (exactly<GRUOptions>(options)) return options.cast<GRUOptions>();
  if (exactly<LSTMOptions>(options)) return options.cast<LSTMOptions>();
  if (exactly<SingleGateRNNOptions>(options)) return options.cast<SingleGateRNNOptions>();
  if (py::isinstance<SingleGateRNNOptions>(options)) return options.cast<SingleGateRNNOptions>();
  if (py::isinstance<LSTMOptions>(options)) return options.cast<LSTMOptions>();
  if (py::isinstance<GRUOptions>(options)) return options.cast<GRUOptions>();
  throw py::type_error(std::string(where) +
                       ": expected SingleGateRNNOptions, LSTMOptions or GRUOptions, got " +
                       type_name(options));
}

void bind_cell_options(py::module_& m) {
  using py::arg;
  auto act_arg = [](const char* name, Activation fallback) {
    return arg(name).noconvert() = static_cast<RawActivation>(fallback);
  };
  auto flag_arg = [](const char* name) { return arg(name).noconvert() = false; };

  OptionsClass<SingleGateRNNOptions>(m, "SingleGateRNNOptions",
                                     "singleGateRNN's descriptor, parsed.")
      .activation("activation", &SingleGateRNNOptions::activation)
      .init(
          [](bool reverse, bool bidirectional, RawActivation act) {
            SingleGateRNNOptions o;
            o.reverse = reverse;
            o.bidirectional = bidirectional;
            o.activation = activation(act, "singleGateRNN: activation");
            return o;
          },
          flag_arg("reverse"), flag_arg("bidirectional"), act_arg("activation", Activation::relu));

  OptionsClass<LSTMOptions>(m, "LSTMOptions", "LSTM's descriptor, parsed.")
      .flag("forgetGateLast", &LSTMOptions::forgetGateLast)
      .activation("inputGateActivation", &LSTMOptions::inputGateActivation)
      .activation("forgetGateActivation", &LSTMOptions::forgetGateActivation)
      .activation("cellGateActivation", &LSTMOptions::cellGateActivation)
      .activation("outputGateActivation", &LSTMOptions::outputGateActivation)
      .activation("activation", &LSTMOptions::activation)
      .init(
          [](bool reverse, bool bidirectional, bool forgetGateLast, RawActivation i,
             RawActivation f, RawActivation z, RawActivation out, RawActivation act) {
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
          },
          flag_arg("reverse"), flag_arg("bidirectional"), flag_arg("forgetGateLast"),
          act_arg("inputGateActivation", Activation::sigmoid),
          act_arg("forgetGateActivation", Activation::sigmoid),
          act_arg("cellGateActivation", Activation::tanh),
          act_arg("outputGateActivation", Activation::sigmoid),
          act_arg("activation", Activation::tanh));

  OptionsClass<GRUOptions>(m, "GRUOptions", "GRU's descriptor, parsed.")
      .flag("resetGateFirst", &GRUOptions::resetGateFirst)
      .flag("resetAfter", &GRUOptions::resetAfter)
      .flag("flipZ", &GRUOptions::flipZ)
      .activation("updateGateActivation", &GRUOptions::updateGateActivation)
      .activation("resetGateActivation", &GRUOptions::resetGateActivation)
      .activation("outputGateActivation", &GRUOptions::outputGateActivation)
      .init(
          [](bool reverse, bool bidirectional, bool resetGateFirst, bool resetAfter, bool flipZ,
             RawActivation z, RawActivation r, RawActivation out) {
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
          },
          flag_arg("reverse"), flag_arg("bidirectional"), flag_arg("resetGateFirst"),
          flag_arg("resetAfter"), flag_arg("flipZ"),
          act_arg("updateGateActivation", Activation::sigmoid),
          act_arg("resetGateActivation", Activation::sigmoid),
          act_arg("outputGateActivation", Activation::tanh));
}

}  // namespace rnngraph::bind
