// Bindings for the three RNN cells: check every array against the SPEC.md layouts,
// allocate the outputs, release the GIL and call one core function.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "array_args.hpp"
#include "call_arguments.hpp"
#include "cell_options.hpp"
#include "rnngraph/gru.hpp"
#include "rnngraph/lstm.hpp"
#include "rnngraph/packed_weights.hpp"
#include "rnngraph/single_gate_rnn.hpp"

namespace rnngraph::bind {
namespace {

// A forward op's recurrentWeight and inputWeight packed once (Graph constants): made by
// pack_forward_weights, passed to rnn_forward as packed=.
struct PackedWeights {
  std::string op;
  std::shared_ptr<const PackedForwardWeights<float>> f32;
  std::shared_ptr<const PackedForwardWeights<double>> f64;

  template <class S>
  const PackedForwardWeights<S>* get() const {
    if constexpr (std::is_same_v<S, float>) return f32.get();
    else return f64.get();
  }
};

// Gates, directions and H from the options and recurrentWeight (rank checked).
RNNShape weight_sizes(const CellOptions& opts, const std::string& op,
                      const py::object& recurrentWeight) {
  RNNShape s;
  s.gates = traits_of(opts).gates;
  s.bidirectional = is_bidirectional(opts);
  py::array R = as_array(recurrentWeight, op, "recurrentWeight");
  if (R.ndim() != (s.bidirectional ? 3 : 2)) {
    throw py::value_error(op + ": recurrentWeight: expected rank " +
                          std::to_string(s.bidirectional ? 3 : 2) + ", got shape " +
                          shape_str(shape_of(R)));
  }
  s.H = R.shape(R.ndim() - 1);
  if (s.H <= 0) throw py::value_error(op + ": recurrentWeight: hidden size H must be positive");
  return s;
}

// Sizes from source and recurrentWeight, checked against each other.
RNNShape infer_shape(const CellOptions& opts, const std::string& op, const Inputs& in) {
  const py::object source = in["source"], recurrentWeight = in["recurrentWeight"];
  if (source.is_none()) throw py::value_error(op + ": source is required");
  if (recurrentWeight.is_none()) throw py::value_error(op + ": recurrentWeight is required");
  RNNShape s = weight_sizes(opts, op, recurrentWeight);
  s.has_input_weight = !in["inputWeight"].is_none();
  py::array src = as_array(source, op, "source");
  if (src.ndim() != 3) {
    throw py::value_error(op + ": source: expected rank 3 [T, N, I], got shape " +
                          shape_str(shape_of(src)));
  }
  s.T = src.shape(0);
  s.N = src.shape(1);
  s.I = s.has_input_weight ? src.shape(2) : 0;
  if (s.has_input_weight && s.I <= 0)
    throw py::value_error(op + ": source: input size I must be positive");
  return s;
}

Shape weight_shape(const RNNShape& s) {
  return s.bidirectional ? Shape{2, s.GH(), s.H} : Shape{s.GH(), s.H};
}

// The core function for the cell's options type, run without the GIL.
template <class S>
void forward(const SingleGateRNNOptions& o, const RNNShape& s, const ForwardArgs<S>& a) {
  single_gate_rnn_forward<S>(o, s, a);
}
template <class S>
void forward(const LSTMOptions& o, const RNNShape& s, const ForwardArgs<S>& a) {
  lstm_forward<S>(o, s, a);
}
template <class S>
void forward(const GRUOptions& o, const RNNShape& s, const ForwardArgs<S>& a) {
  gru_forward<S>(o, s, a);
}
template <class S>
void gradients(const SingleGateRNNOptions& o, const RNNShape& s, const GradientArgs<S>& a) {
  single_gate_rnn_gradients<S>(o, s, a);
}
template <class S>
void gradients(const LSTMOptions& o, const RNNShape& s, const GradientArgs<S>& a) {
  lstm_gradients<S>(o, s, a);
}
template <class S>
void gradients(const GRUOptions& o, const RNNShape& s, const GradientArgs<S>& a) {
  gru_gradients<S>(o, s, a);
}

// The inputs a forward op and its gradient op share (their Args have the same fields): where
// each goes, and its SPEC.md layout.
template <class S, template <class> class Args>
struct SharedInput {
  const char* label;
  const S* Args<S>::* field;
  bool required;
  Shape (*layout)(const RNNShape&);
};
template <class S, template <class> class Args>
constexpr SharedInput<S, Args> shared_inputs[] = {
    {"source", &Args<S>::source, true,
     [](const RNNShape& s) -> Shape { return {s.T, s.N, s.source_cols()}; }},
    {"recurrentWeight", &Args<S>::recurrentWeight, true, weight_shape},
    {"inputWeight", &Args<S>::inputWeight, false,
     [](const RNNShape& s) -> Shape { return {s.DGH(), s.I}; }},
    {"bias", &Args<S>::bias, false, [](const RNNShape& s) -> Shape { return {s.DGH()}; }},
    {"initState", &Args<S>::initState, false,
     [](const RNNShape& s) -> Shape { return {s.N, s.DH()}; }},
    {"initCell", &Args<S>::initCell, false,
     [](const RNNShape& s) -> Shape { return {s.N, s.DH()}; }},
    {"mask", &Args<S>::mask, false, [](const RNNShape& s) -> Shape { return {s.T, s.N, s.DH()}; }},
    {"peephole", &Args<S>::peephole, false,
     [](const RNNShape& s) -> Shape { return {s.D() * 4 * s.H}; }},
    {"secondaryBias", &Args<S>::secondaryBias, false,
     [](const RNNShape& s) -> Shape { return {s.DH()}; }},
};
constexpr size_t shared_input_count = std::size(shared_inputs<float, ForwardArgs>);

template <class S, template <class> class Args>
void read_op_inputs(const Inputs& in, const RNNShape& s, Args<S>& a) {
  for (size_t i = 0; i < shared_input_count; ++i) {
    const auto& input = shared_inputs<S, Args>[i];
    a.*input.field = in.array<S>(input.label, input.layout(s), input.required);
  }
}

// Each direction's state at its last processed step, [D, N, H] as torch.nn returns h_n and c_n
// (SPEC.md section 4: the forward direction's at t = T-1, the reverse direction's at t = 0),
// from a sequence [T, N, D*H]; with T = 0, the initial state [N, D*H] (zeros when absent).
template <class S>
py::array_t<S> final_states(const S* sequence, const S* initial, const RNNShape& s, bool reverse) {
  const Index D = s.D(), N = s.N, H = s.H, DH = s.DH();
  auto out = output<S>({D, N, H});
  S* states = out.mutable_data();
  for (Index d = 0; d < D; ++d) {
    const bool reversed = d == 1 || (D == 1 && reverse);
    const S* step = s.T == 0 ? initial : sequence + (reversed ? 0 : s.T - 1) * N * DH;
    for (Index n = 0; n < N; ++n) {
      S* state = states + (d * N + n) * H;
      if (step) std::copy_n(step + n * DH + d * H, H, state);
      else std::fill_n(state, H, S(0));
    }
  }
  return out;
}

// The outputs allocated, the core run without the GIL: (h, c or None, zState or None), then
// with `finals` each direction's final h and c, then with `keep_product` recurrentProduct.
template <class S>
py::tuple run_forward(const CellOptions& opts, const RNNShape& s, ForwardArgs<S>& a, bool training,
                      bool finals, bool keep_product) {
  const bool lstm = std::holds_alternative<LSTMOptions>(opts);
  const Index T = s.T, N = s.N, DH = s.DH();
  auto h = output<S>({T, N, DH});
  a.output = h.mutable_data();
  py::object c = py::none(), z = py::none();
  if (lstm) {
    auto cell_out = output<S>({T, N, DH});
    a.cellOutput = cell_out.mutable_data();
    c = cell_out;
  }
  if (training) {
    auto z_out = output<S>({T, N, s.DGH()});
    a.zState = z_out.mutable_data();
    z = z_out;
  }
  py::object product = py::none();
  const auto* gru = std::get_if<GRUOptions>(&opts);
  if (keep_product && training && gru && keeps_recurrent_product(*gru)) {
    auto kept = output<S>({T, N, DH});
    a.recurrentProduct = kept.mutable_data();
    product = kept;
  }
  {
    py::gil_scoped_release release;
    std::visit([&](const auto& options) { forward(options, s, a); }, opts);
  }
  py::tuple result = py::make_tuple(h, c, z);
  if (finals) {
    const bool reverse = std::visit([](const auto& options) { return options.reverse; }, opts);
    py::object h_n = final_states<S>(a.output, a.initState, s, reverse), c_n = py::none();
    if (lstm) c_n = final_states<S>(a.cellOutput, a.initCell, s, reverse);
    result = result + py::make_tuple(h_n, c_n);
  }
  return keep_product ? result + py::make_tuple(product) : result;
}

// The checked inputs of a forward call, the packed weights (checked against them) in place.
template <class S>
ForwardArgs<S> forward_args(const CellOptions& opts, const std::string& op, const Inputs& in,
                            const PackedWeights* packed, RNNShape& s) {
  s = infer_shape(opts, op, in);
  ForwardArgs<S> a;
  read_op_inputs(in, s, a);
  if (packed) {
    a.packed = packed->get<S>();
    if (packed->op != op || !a.packed || !packed_weights_match(*a.packed, s)) {
      throw py::value_error(op + ": packed: weights packed for another op, shape or dtype");
    }
  }
  return a;
}

template <class S>
py::tuple forward_typed(const CellOptions& opts, const Inputs& in, bool training,
                        const PackedWeights* packed, bool finals, bool keep_product) {
  const std::string op = traits_of(opts).op;
  RNNShape s;
  ForwardArgs<S> a = forward_args<S>(opts, op, in, packed, s);
  return run_forward<S>(opts, s, a, training, finals, keep_product);
}

// A forward op's call prepared once (prepare_forward): its options, shape and fixed inputs
// (a Graph's constants, the packed weights) checked and kept, so that each later call only
// checks and passes the inputs that change from run to run (`run_inputs`, in order).
class PreparedForward {
 public:
  template <class S>
  PreparedForward(const CellOptions& opts, std::string op, const RNNShape& s, ForwardArgs<S> base,
                  std::vector<size_t> run_inputs, bool training, bool keep_product)
      : opts_(opts),
        op_(std::move(op)),
        s_(s),
        base_(base),
        run_inputs_(std::move(run_inputs)),
        training_(training),
        keep_product_(keep_product) {}

  // The fixed inputs' arrays and the packed weights, kept alive as long as this is.
  std::vector<py::object> kept;

  py::tuple run(const py::args& arrays) const {
    if (arrays.size() != run_inputs_.size()) {
      throw py::value_error(op_ + ": prepared call: expected one array for each of (" + labels() +
                            "), got " + std::to_string(arrays.size()) + " arrays");
    }
    return naming_memory_errors(op_, [&] {
      return std::visit(
          [&](auto base) {  // (a copy: concurrent calls from several Python threads)
            using S = std::remove_const_t<std::remove_pointer_t<decltype(base.source)>>;
            for (size_t i = 0; i < run_inputs_.size(); ++i) {
              const auto& input = shared_inputs<S, ForwardArgs>[run_inputs_[i]];
              base.*input.field =
                  rnngraph::bind::input<S>(arrays[i], op_, input.label, input.layout(s_), true);
            }
            return run_forward<S>(opts_, s_, base, training_, false, keep_product_);
          },
          base_);
    });
  }

  std::string labels() const {
    std::string all;
    for (size_t i : run_inputs_)
      all += (all.empty() ? "" : ", ") + std::string(shared_inputs<float, ForwardArgs>[i].label);
    return all;
  }

 private:
  CellOptions opts_;
  std::string op_;
  RNNShape s_;
  std::variant<ForwardArgs<float>, ForwardArgs<double>> base_;
  std::vector<size_t> run_inputs_;
  bool training_, keep_product_;
};

template <class S>
py::dict gradients_typed(const CellOptions& opts, const Inputs& in) {
  const std::string op = traits_of(opts).gradient_op;
  const bool lstm = std::holds_alternative<LSTMOptions>(opts);
  const bool gru = std::holds_alternative<GRUOptions>(opts);
  const RNNShape s = infer_shape(opts, op, in);
  const Index T = s.T, N = s.N, DH = s.DH();
  GradientArgs<S> a;
  read_op_inputs(in, s, a);
  a.sourceGradient = in.array<S>("sourceGradient", {T, N, DH}, true);
  a.zState = in.array<S>("zState", {T, N, s.DGH()}, true);
  a.outputFwd = in.array<S>("outputFwd", {T, N, DH}, gru);
  a.cellOutputFwd = in.array<S>("cellOutputFwd", {T, N, DH}, lstm);
  a.stateGradient = in.array<S>("stateGradient", {N, DH});
  a.cellGradient = in.array<S>("cellGradient", {N, DH});
  // LSTM only (the other cells do not take the label): laid out as cellOutputFwd.
  a.cellSequenceGradient = in.array<S>("cellSequenceGradient", {T, N, DH});
  // GRU only: laid out as outputFwd.
  a.recurrentProduct = in.array<S>("recurrentProduct", {T, N, DH});

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
  {
    py::gil_scoped_release release;
    std::visit([&](const auto& options) { gradients(options, s, a); }, opts);
  }
  return grads;
}

}  // namespace

void bind_rnn(py::module_& m) {
  py::class_<PackedWeights>(
      m, "PackedWeights",
      "A forward op's weights packed for its kernels (from pack_forward_weights).");
  m.def(
      "pack_forward_weights",
      [](const py::object& options, const py::object& recurrentWeight,
         const py::object& inputWeight) {
        const CellOptions opts = options_from(options, "pack_forward_weights: options");
        const std::string op = traits_of(opts).op;
        auto result = std::make_unique<PackedWeights>();
        result->op = op;
        naming_memory_errors(op, [&] {
          return dispatch(op, "recurrentWeight", recurrentWeight, [&](auto tag) {
            using S = decltype(tag);
            RNNShape s = weight_sizes(opts, op, recurrentWeight);
            s.has_input_weight = !inputWeight.is_none();
            if (s.has_input_weight) {
              py::array W = as_array(inputWeight, op + ": inputWeight");
              s.I = W.ndim() == 2 ? W.shape(1) : 0;
              if (s.I <= 0)
                throw py::value_error(op + ": inputWeight: input size I must be positive");
            }
            const S* r = input<S>(recurrentWeight, op, "recurrentWeight", weight_shape(s), true);
            const S* w = input<S>(inputWeight, op, "inputWeight", {s.DGH(), s.I});
            std::shared_ptr<const PackedForwardWeights<S>> packed;
            {
              py::gil_scoped_release release;
              packed = pack_forward_weights(s.D(), s.gates, s.H, s.I, r, w);
            }
            if constexpr (std::is_same_v<S, float>) result->f32 = std::move(packed);
            else result->f64 = std::move(packed);
            return 0;
          });
        });
        return result;
      },
      py::arg("options"), py::arg("recurrentWeight"), py::arg("inputWeight") = py::none(),
      "Pack a forward op's recurrentWeight (and inputWeight) once for many rnn_forward calls.");

  m.def(
      "rnn_forward",
      [](const py::object& options, const py::object& inputs, const py::object& training_arg,
         const PackedWeights* packed, const py::object& finals_arg, const py::object& product_arg) {
        const CellOptions opts = options_from(options, "rnn_forward: options");
        const CellTraits& t = traits_of(opts);
        const bool training = strict_bool(training_arg, t.op, "training");
        const bool finals = strict_bool(finals_arg, t.op, "final_states");
        const bool keep = strict_bool(product_arg, t.op, "recurrent_product");
        const Inputs in(inputs, t.op, t.forward_labels);
        return naming_memory_errors(t.op, [&] {
          return dispatch(t.op, "source", in["source"], [&](auto tag) {
            return forward_typed<decltype(tag)>(opts, in, training, packed, finals, keep);
          });
        });
      },
      py::arg("options"), py::arg("inputs"), py::kw_only(), py::arg("training") = false,
      py::arg("packed") = nullptr, py::arg("final_states") = false,
      py::arg("recurrent_product") = false,
      "Forward pass of one RNN op on dense arrays in SPEC.md layouts. inputs: {label: array or\n"
      "None} by Swift label; packed: the same recurrentWeight and inputWeight from\n"
      "pack_forward_weights, used in their place.\n"
      "Returns (h [T,N,D*H], c [T,N,D*H] or None, zState [T,N,D*G*H] or None); with\n"
      "final_states, also each direction's final h and c [D,N,H] (c None but for the LSTM);\n"
      "with recurrent_product, last, the internal recurrentProduct [T,N,D*H] that a training\n"
      "resetAfter GRU keeps for rnn_gradients (hm*R_o^T + b2 of every step; None otherwise).");
  py::class_<PreparedForward>(
      m, "PreparedForward",
      "A forward op's call prepared once (from prepare_forward); run(*arrays) makes it.")
      .def("run", &PreparedForward::run,
           "The forward call on this run's arrays, in the prepared run_labels' order, each\n"
           "checked against its layout. Returns (h, c or None, zState or None), then\n"
           "recurrentProduct with recurrent_product, as rnn_forward does.")
      .def_property_readonly("run_labels", &PreparedForward::labels,
                             "The labels run() takes, in order, comma-separated.");
  m.def(
      "prepare_forward",
      [](const py::object& options, const py::object& inputs, const py::list& run,
         const py::object& training_arg, const py::object& packed_arg,
         const py::object& product_arg) {
        const CellOptions opts = options_from(options, "prepare_forward: options");
        const CellTraits& t = traits_of(opts);
        const bool training = strict_bool(training_arg, t.op, "training");
        const bool keep = strict_bool(product_arg, t.op, "recurrent_product");
        if (!packed_arg.is_none() && !py::isinstance<PackedWeights>(packed_arg)) {
          throw py::type_error(std::string(t.op) +
                               ": prepare_forward: packed: expected weights from "
                               "pack_forward_weights or None");
        }
        const PackedWeights* packed =
            packed_arg.is_none() ? nullptr : &packed_arg.cast<const PackedWeights&>();
        const Inputs in(inputs, t.op, t.forward_labels);
        std::vector<size_t> run_inputs;
        for (const py::handle& item : run) {
          if (!py::isinstance<py::str>(item))
            throw py::type_error(std::string(t.op) + ": prepare_forward: run_labels: expected str");
          const std::string label = item.cast<std::string>();
          size_t i = 0;
          while (i < shared_input_count && label != shared_inputs<float, ForwardArgs>[i].label) ++i;
          if (i == shared_input_count || in[label.c_str()].is_none()) {
            throw py::value_error(std::string(t.op) + ": prepare_forward: run_labels: " + label +
                                  " is not one of the inputs given");
          }
          if (packed && (label == "recurrentWeight" || label == "inputWeight")) {
            throw py::value_error(std::string(t.op) + ": prepare_forward: run_labels: " + label +
                                  " is packed (packed=), so it cannot change from run to run");
          }
          run_inputs.push_back(i);
        }
        return naming_memory_errors(t.op, [&] {
          return dispatch(t.op, "source", in["source"], [&](auto tag) {
            using S = decltype(tag);
            RNNShape s;
            ForwardArgs<S> a = forward_args<S>(opts, t.op, in, packed, s);
            for (size_t i : run_inputs) a.*shared_inputs<S, ForwardArgs>[i].field = nullptr;
            // Only the fixed inputs are held: a run's own arrays are not kept past its call.
            std::vector<py::object> kept;
            for (size_t i = 0; i < shared_input_count; ++i) {
              if (std::find(run_inputs.begin(), run_inputs.end(), i) == run_inputs.end())
                kept.push_back(in[shared_inputs<S, ForwardArgs>[i].label]);
            }
            auto prepared = std::make_unique<PreparedForward>(
                opts, t.op, s, a, std::move(run_inputs), training, keep);
            prepared->kept = std::move(kept);
            prepared->kept.push_back(packed_arg);
            return prepared;
          });
        });
      },
      py::arg("options"), py::arg("inputs"), py::arg("run_labels"), py::kw_only(),
      py::arg("training") = false, py::arg("packed") = py::none(),
      py::arg("recurrent_product") = false,
      "Check a forward op's call once and keep it: inputs as for rnn_forward (this run's\n"
      "arrays); run_labels: those whose arrays change from run to run, passed to run() in\n"
      "this order (each present in inputs); every other array is kept as it is now (it must\n"
      "not change: a Graph's constants), with the packed weights. Shapes are fixed.");
  m.def(
      "rnn_gradients",
      [](const py::object& options, const py::object& inputs) {
        const CellOptions opts = options_from(options, "rnn_gradients: options");
        const CellTraits& t = traits_of(opts);
        const Inputs in(inputs, t.gradient_op, t.gradient_labels);
        return naming_memory_errors(t.gradient_op, [&] {
          return dispatch(t.gradient_op, "source", in["source"],
                          [&](auto tag) { return gradients_typed<decltype(tag)>(opts, in); });
        });
      },
      py::arg("options"), py::arg("inputs"),
      "Gradient op of one RNN on dense arrays in SPEC.md layouts. inputs: {label: array or None}.\n"
      "The LSTM also takes the internal cellSequenceGradient, dL/dc for every step [T,N,D*H]\n"
      "(laid out as cellOutputFwd); a resetAfter GRU the internal recurrentProduct that\n"
      "rnn_forward kept, used instead of computing it again. Returns {label: gradient} for\n"
      "source, recurrentWeight and each given optional input.");
}

}  // namespace rnngraph::bind
