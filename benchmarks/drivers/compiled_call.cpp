// rnngraph's forward op on one inference row, called through its C++ core with no Python in
// between: what a Graph.run of the row costs without Graph.run's Python and the bindings
// (benchmarks/compiled_call.py builds this against the core's static library of this CPU's
// kernel level and runs it in a process of its own). Used beside onednn/rnn_driver.cpp, which
// times oneDNN's primitive the same way, to tell the kernels' time from the call's overhead.
//
//   compiled_call CELL T N I H DIR THREADS BUDGET_S MIN_REPS SETTLE_S
//
// CELL: lstm | gru (reset gate before the product) | lbr_gru (reset after) | rnn (tanh), as
// the benchmark rows' descriptors set them (ours.make_step). DIR: uni | bi. The weights are
// packed once, as a Graph packs its constant weights at the first run (SPEC.md section 1
// layouts); every call reads the same source and initial state and writes the same outputs.
// Timing: call_timing.hpp. Prints one JSON line: median_ms, min_ms, mean_ms, p90_ms, reps.
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "call_timing.hpp"
#include "rnngraph/gru.hpp"
#include "rnngraph/lstm.hpp"
#include "rnngraph/packed_weights.hpp"
#include "rnngraph/single_gate_rnn.hpp"
#include "rnngraph/threads.hpp"

namespace {

using rnngraph::Index;

std::vector<float> random_values(size_t n, float scale, std::mt19937& engine) {
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> out(n);
  for (float& v : out) v = uniform(engine);
  return out;
}

class Step {
 public:
  Step(const std::string& cell, Index T, Index N, Index I, Index H, bool bidirectional)
      : cell_(cell) {
    const int gates = cell == "lstm" ? 4 : cell == "rnn" ? 1 : 3;
    if (cell != "lstm" && cell != "gru" && cell != "lbr_gru" && cell != "rnn")
      throw std::invalid_argument("CELL: expected lstm, gru, lbr_gru or rnn, got " + cell);
    shape_.T = T;
    shape_.N = N;
    shape_.I = I;
    shape_.H = H;
    shape_.gates = gates;
    shape_.bidirectional = bidirectional;
    shape_.has_input_weight = true;
    const Index D = shape_.D(), DH = shape_.DH(), DGH = shape_.DGH();
    std::mt19937 engine(0);
    const float scale = 1.0f / std::sqrt(static_cast<float>(H));
    source_ = random_values(T * N * I, 1.0f, engine);
    recurrent_ = random_values(D * gates * H * H, scale, engine);
    input_ = random_values(DGH * I, scale, engine);
    bias_ = random_values(DGH, scale, engine);
    state_ = random_values(N * DH, scale, engine);
    cell_state_ = random_values(N * DH, scale, engine);
    secondary_ = random_values(DH, scale, engine);
    output_.resize(T * N * DH);
    cell_output_.resize(T * N * DH);
    packed_ =
        rnngraph::pack_forward_weights<float>(D, gates, H, I, recurrent_.data(), input_.data());
    args_.packed = packed_.get();
    args_.source = source_.data();
    args_.recurrentWeight = recurrent_.data();
    args_.inputWeight = input_.data();
    args_.bias = bias_.data();
    args_.initState = state_.data();
    args_.output = output_.data();
    if (cell == "lstm") {
      args_.initCell = cell_state_.data();
      args_.cellOutput = cell_output_.data();
    }
    if (cell == "lbr_gru") args_.secondaryBias = secondary_.data();
  }

  void run() {
    if (cell_ == "lstm") {
      rnngraph::lstm_forward<float>(rnngraph::LSTMOptions{}, shape_, args_);
    } else if (cell_ == "rnn") {
      rnngraph::SingleGateRNNOptions options;
      options.activation = rnngraph::Activation::tanh;
      rnngraph::single_gate_rnn_forward<float>(options, shape_, args_);
    } else {
      rnngraph::GRUOptions options;
      options.resetAfter = cell_ == "lbr_gru";
      rnngraph::gru_forward<float>(options, shape_, args_);
    }
  }

 private:
  std::string cell_;
  rnngraph::RNNShape shape_;
  std::vector<float> source_, recurrent_, input_, bias_, state_, cell_state_, secondary_;
  std::vector<float> output_, cell_output_;
  std::shared_ptr<const rnngraph::PackedForwardWeights<float>> packed_;
  rnngraph::ForwardArgs<float> args_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 11) {
    std::fprintf(stderr, "usage: %s CELL T N I H uni|bi THREADS BUDGET_S MIN_REPS SETTLE_S\n",
                 argv[0]);
    return 2;
  }
  try {
    rnngraph::set_num_threads(std::stoi(argv[7]));
    Step step(argv[1], std::stol(argv[2]), std::stol(argv[3]), std::stol(argv[4]),
              std::stol(argv[5]), std::string(argv[6]) == "bi");
    const std::string timing =
        call_timing::measure(step, std::stod(argv[8]), std::stoi(argv[9]), std::stod(argv[10]));
    std::printf("{%s}\n", timing.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compiled_call: %s\n", e.what());
    return 1;
  }
  return 0;
}
