// oneDNN's own RNN primitives on one benchmark row: the strongest CPU peer, called directly
// (benchmarks/onednn_peer.py builds this against Debian's libdnnl-dev and runs it in a process
// of its own; rnngraph never links oneDNN).
//
//   rnn_driver CELL T N I H DIR MODE BUDGET_S MIN_REPS SETTLE_S [IO_DIR]
//
// CELL: lstm | gru (reset gate before the product) | lbr_gru (reset after) | rnn (tanh).
// DIR: uni | bi (bidirectional_concat). MODE: infer (forward_inference) | train
// (forward_training, then backward with every gradient). Threads: OMP_NUM_THREADS.
//
// Timing: drivers/driver.hpp, as benchmarks/timing.py measures the Python libraries.
// Weights are reordered into the primitives' layouts once, outside the timing. A train step
// zeroes the weight and bias gradients (oneDNN accumulates into them) and leaves them in the
// backward primitive's layout. Prints one JSON line: median_ms, min_ms, mean_ms, p90_ms, reps
// and the implementations oneDNN chose (RNN_DRIVER_TIMES: every call's time, driver.hpp).
//
// With IO_DIR: no timing. Every input is read from IO_DIR/<arg>.f32 in oneDNN's user layouts
// (row-major tnc, ldnc, ldigo, ldgo), one step runs, and every output is written there the same
// way (tests/test_onednn_peer.py compares them with rnngraph's).
#include <oneapi/dnnl/dnnl.hpp>

#include "../drivers/driver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

namespace {

struct Problem {
  std::string cell;
  memory::dim T, N, I, H, D;
  bool train;
  memory::dim gates() const { return cell == "lstm" ? 4 : cell == "rnn" ? 1 : 3; }
  // lbr_gru's bias has a fourth gate: the candidate's recurrent bias, inside the reset.
  memory::dim bias_gates() const { return gates() + (cell == "lbr_gru"); }
};

struct Descs {  // every tensor of the problem; weights in format any for the primitives
  memory::desc src_layer, src_iter, src_iter_c, weights_layer, weights_iter, bias, dst_layer,
      dst_iter, dst_iter_c;
};

Descs descs(const Problem& p) {
  const memory::dim G = p.gates();
  return {{{p.T, p.N, p.I}, dt::f32, tag::tnc},
          {{1, p.D, p.N, p.H}, dt::f32, tag::ldnc},
          {{1, p.D, p.N, p.H}, dt::f32, tag::ldnc},
          {{1, p.D, p.I, G, p.H}, dt::f32, tag::any},
          {{1, p.D, p.H, G, p.H}, dt::f32, tag::any},
          {{1, p.D, p.bias_gates(), p.H}, dt::f32, tag::ldgo},
          {{p.T, p.N, p.D * p.H}, dt::f32, tag::tnc},
          {{1, p.D, p.N, p.H}, dt::f32, tag::ldnc},
          {{1, p.D, p.N, p.H}, dt::f32, tag::ldnc}};
}

dnnl::rnn_direction direction(const Problem& p) {
  return p.D == 2 ? dnnl::rnn_direction::bidirectional_concat
                  : dnnl::rnn_direction::unidirectional_left2right;
}

// The tensors of a cell's descriptor, in oneDNN's order; only the LSTM has a cell state (the
// *_iter_c tensors).
template <bool kCellState>
auto tensors(const Descs& d) {
  if constexpr (kCellState)
    return std::tie(d.src_layer, d.src_iter, d.src_iter_c, d.weights_layer, d.weights_iter, d.bias,
                    d.dst_layer, d.dst_iter, d.dst_iter_c);
  else
    return std::tie(d.src_layer, d.src_iter, d.weights_layer, d.weights_iter, d.bias, d.dst_layer,
                    d.dst_iter);
}

// A descriptor: its leading arguments (prop kind, [activation,] direction), then the tensors,
// once for a forward primitive and twice for a backward one (the data, then their gradients,
// which share their shapes).
template <class Desc, bool kCellState, bool kBackward, class... Lead>
Desc describe(const Descs& d, Lead... lead) {
  const auto once = tensors<kCellState>(d);
  const auto make = [&](const auto&... t) { return Desc(lead..., t...); };
  if constexpr (kBackward) return std::apply(make, std::tuple_cat(once, once));
  else return std::apply(make, once);
}

struct Primitives {
  dnnl::rnn_primitive_desc_base forward, backward;  // backward: train rows only
};

// A cell's primitives; `extra` sits between the prop kind and the direction (the vanilla
// RNN's activation).
template <class Fwd, class Bwd, bool kCellState, class... Extra>
Primitives primitives(const Problem& p, const dnnl::engine& engine, Extra... extra) {
  const Descs d = descs(p);
  const auto dir = direction(p);
  const auto prop =
      p.train ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const typename Fwd::primitive_desc forward(
      describe<typename Fwd::desc, kCellState, false>(d, prop, extra..., dir), engine);
  Primitives out{forward, {}};
  if (p.train)
    out.backward = typename Bwd::primitive_desc(
        describe<typename Bwd::desc, kCellState, true>(d, dnnl::prop_kind::backward, extra..., dir),
        engine, forward);
  return out;
}

Primitives primitives(const Problem& p, const dnnl::engine& engine) {
  if (p.cell == "lstm") return primitives<dnnl::lstm_forward, dnnl::lstm_backward, true>(p, engine);
  if (p.cell == "gru") return primitives<dnnl::gru_forward, dnnl::gru_backward, false>(p, engine);
  if (p.cell == "lbr_gru")
    return primitives<dnnl::lbr_gru_forward, dnnl::lbr_gru_backward, false>(p, engine);
  if (p.cell == "rnn")
    return primitives<dnnl::vanilla_rnn_forward, dnnl::vanilla_rnn_backward, false>(
        p, engine, dnnl::algorithm::eltwise_tanh);
  throw std::invalid_argument("CELL: lstm, gru, lbr_gru or rnn, not " + p.cell);
}

const std::map<int, std::string> kInputs = {{DNNL_ARG_SRC_LAYER, "src_layer"},
                                            {DNNL_ARG_SRC_ITER, "src_iter"},
                                            {DNNL_ARG_SRC_ITER_C, "src_iter_c"},
                                            {DNNL_ARG_WEIGHTS_LAYER, "weights_layer"},
                                            {DNNL_ARG_WEIGHTS_ITER, "weights_iter"},
                                            {DNNL_ARG_BIAS, "bias"},
                                            {DNNL_ARG_DIFF_DST_LAYER, "diff_dst_layer"},
                                            {DNNL_ARG_DIFF_DST_ITER, "diff_dst_iter"},
                                            {DNNL_ARG_DIFF_DST_ITER_C, "diff_dst_iter_c"}};
const std::map<int, std::string> kOutputs = {{DNNL_ARG_DST_LAYER, "dst_layer"},
                                             {DNNL_ARG_DST_ITER, "dst_iter"},
                                             {DNNL_ARG_DST_ITER_C, "dst_iter_c"},
                                             {DNNL_ARG_DIFF_SRC_LAYER, "diff_src_layer"},
                                             {DNNL_ARG_DIFF_SRC_ITER, "diff_src_iter"},
                                             {DNNL_ARG_DIFF_SRC_ITER_C, "diff_src_iter_c"},
                                             {DNNL_ARG_DIFF_WEIGHTS_LAYER, "diff_weights_layer"},
                                             {DNNL_ARG_DIFF_WEIGHTS_ITER, "diff_weights_iter"},
                                             {DNNL_ARG_DIFF_BIAS, "diff_bias"}};
const int kAccumulated[] = {DNNL_ARG_DIFF_WEIGHTS_LAYER, DNNL_ARG_DIFF_WEIGHTS_ITER,
                            DNNL_ARG_DIFF_BIAS};

// The row-major user layout of a primitive's tensor (tnc, ldnc / ldgo, ldigo by rank).
memory::desc user_desc(const memory::desc& md) {
  const memory::dims dims = md.dims();
  const tag plain = dims.size() == 3 ? tag::abc : dims.size() == 4 ? tag::abcd : tag::abcde;
  return {dims, dt::f32, plain};
}

class Step {
 public:
  Step(const Problem& p, const std::string& io_dir)
      : engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        io_dir_(io_dir),
        weight_scale_(1.0f / std::sqrt(static_cast<float>(p.H))) {
    auto [forward, backward] = primitives(p, engine_);
    fwd_pd_ = forward;
    fwd_ = dnnl::primitive(fwd_pd_);
    bind(fwd_pd_, fwd_args_);
    if (p.train) {
      bwd_pd_ = backward;
      bwd_ = dnnl::primitive(bwd_pd_);
      bind(bwd_pd_, bwd_args_);
    }
    stream_.wait();
  }

  void run() {
    fwd_.execute(stream_, fwd_args_);
    if (bwd_) {
      for (int arg : kAccumulated) {
        memory& m = bwd_args_.at(arg);
        std::memset(m.get_data_handle(), 0, m.get_desc().get_size());
      }
      bwd_.execute(stream_, bwd_args_);
    }
    stream_.wait();
  }

  void write_outputs(const std::string& io_dir) {
    for (auto* args : {&fwd_args_, &bwd_args_})
      for (const auto& [arg, name] : kOutputs)
        if (args->count(arg)) write(io_dir, name, args->at(arg));
  }

  std::string impl() const {
    std::string out = std::string("{\"forward\": \"") + fwd_pd_.impl_info_str() + "\"";
    if (bwd_) out += std::string(", \"backward\": \"") + bwd_pd_.impl_info_str() + "\"";
    return out + "}";
  }

 private:
  // Every argument the primitive takes, in its layout. Inputs come from the IO files or are
  // random (uniform in ±1 / sqrt(H) for weights and states, as torch.nn initialises), reordered
  // once; the forward's outputs and workspace are shared with the backward.
  void bind(const dnnl::rnn_primitive_desc_base& pd, std::unordered_map<int, memory>& args) {
    for (int arg : {DNNL_ARG_SRC_LAYER, DNNL_ARG_SRC_ITER, DNNL_ARG_SRC_ITER_C,
                    DNNL_ARG_WEIGHTS_LAYER, DNNL_ARG_WEIGHTS_ITER, DNNL_ARG_BIAS,
                    DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C, DNNL_ARG_WORKSPACE,
                    DNNL_ARG_DIFF_SRC_LAYER, DNNL_ARG_DIFF_SRC_ITER, DNNL_ARG_DIFF_SRC_ITER_C,
                    DNNL_ARG_DIFF_WEIGHTS_LAYER, DNNL_ARG_DIFF_WEIGHTS_ITER, DNNL_ARG_DIFF_BIAS,
                    DNNL_ARG_DIFF_DST_LAYER, DNNL_ARG_DIFF_DST_ITER, DNNL_ARG_DIFF_DST_ITER_C}) {
      const memory::desc md = pd.query_md(dnnl::query::exec_arg_md, arg);
      if (md.is_zero()) continue;
      const bool weights = arg == DNNL_ARG_WEIGHTS_LAYER || arg == DNNL_ARG_WEIGHTS_ITER;
      if (&args == &bwd_args_ && !weights && fwd_args_.count(arg) &&
          fwd_args_.at(arg).get_desc() == md) {
        args.emplace(arg, fwd_args_.at(arg));  // src, bias, dst, workspace: the forward's
        continue;
      }
      memory m(md, engine_);
      std::memset(m.get_data_handle(), 0, md.get_size());
      if (kInputs.count(arg))
        fill(kInputs.at(arg), m, arg == DNNL_ARG_DIFF_DST_ITER || arg == DNNL_ARG_DIFF_DST_ITER_C);
      args.emplace(arg, m);
    }
  }

  void fill(const std::string& name, memory& m, bool zero_when_random) {
    memory user(user_desc(m.get_desc()), engine_);
    auto* data = static_cast<float*>(user.get_data_handle());
    const size_t count = user.get_desc().get_size() / sizeof(float);
    if (!io_dir_.empty()) {
      driver::read_floats(io_dir_, name, data, count);
    } else {
      const float scale = name.rfind("diff_", 0) == 0 || name == "src_layer" ? 1.0f : weight_scale_;
      std::uniform_real_distribution<float> uniform(-scale, scale);
      for (size_t i = 0; i < count; ++i) data[i] = zero_when_random ? 0.0f : uniform(rng_);
    }
    dnnl::reorder(user, m).execute(stream_, user, m);
  }

  void write(const std::string& io_dir, const std::string& name, memory& m) {
    memory user(user_desc(m.get_desc()), engine_);
    dnnl::reorder(m, user).execute(stream_, m, user);
    stream_.wait();
    driver::write_floats(io_dir, name, static_cast<const float*>(user.get_data_handle()),
                         user.get_desc().get_size() / sizeof(float));
  }

  dnnl::engine engine_;
  dnnl::stream stream_;
  std::string io_dir_;
  float weight_scale_;
  std::mt19937 rng_{0};
  dnnl::rnn_primitive_desc_base fwd_pd_, bwd_pd_;
  dnnl::primitive fwd_, bwd_;
  std::unordered_map<int, memory> fwd_args_, bwd_args_;
};

}  // namespace

int main(int argc, char** argv) {
  return driver::run_or_time(
      "rnn_driver", "CELL T N I H uni|bi infer|train BUDGET_S MIN_REPS SETTLE_S [IO_DIR]", argc,
      argv,
      [&](const std::string& io_dir) {
        const Problem p{argv[1],
                        std::stol(argv[2]),
                        std::stol(argv[3]),
                        std::stol(argv[4]),
                        std::stol(argv[5]),
                        std::string(argv[6]) == "bi" ? 2 : 1,
                        std::string(argv[7]) == "train"};
        return std::make_unique<Step>(p, io_dir);
      },
      [](Step& step) { return ", \"impl\": " + step.impl(); });
}
