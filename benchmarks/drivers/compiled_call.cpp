// rnngraph's forward op on one inference row, called through its C++ core with no Python in
// between: what a Graph.run of the row costs without Graph.run's Python and the bindings
// (benchmarks/compiled_call.py builds this against the core's static library of this CPU's
// kernel level and runs it in a process of its own). Used beside onednn/rnn_driver.cpp, which
// times oneDNN's primitive the same way, to tell the kernels' time from the call's overhead.
//
//   compiled_call CELL T N I H DIR THREADS BUDGET_S MIN_REPS SETTLE_S [IO_DIR]
//
// CELL: lstm | gru (reset gate before the product) | lbr_gru (reset after) | rnn (tanh), with
// the descriptors' defaults otherwise, as the benchmark rows set them (ours.make_step). DIR:
// uni | bi. The weights are packed once, as a Graph packs its constant weights at its first
// run; every call reads the same source and initial state and writes the same outputs.
// Timing: driver.hpp. Prints one JSON line: median_ms, min_ms, mean_ms, p90_ms, reps.
//
// With IO_DIR: no timing. The inputs are read from IO_DIR/<label>.f32 (float32, row-major, in
// SPEC.md's layouts: source, recurrentWeight, inputWeight, bias, initState, and initCell for
// lstm, secondaryBias for lbr_gru), one call runs, and its outputs are written there the same
// way (output, and cellOutput for lstm; tests/test_compiled_call.py compares them with
// Graph.run's).
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver.hpp"
#include "rnngraph/gru.hpp"
#include "rnngraph/lstm.hpp"
#include "rnngraph/packed_weights.hpp"
#include "rnngraph/single_gate_rnn.hpp"
#include "rnngraph/threads.hpp"

namespace {

using rnngraph::Index;

enum class Cell { lstm, gru, lbr_gru, rnn };

Cell cell_of(const std::string& name) {
  if (name == "lstm") return Cell::lstm;
  if (name == "gru") return Cell::gru;
  if (name == "lbr_gru") return Cell::lbr_gru;
  if (name == "rnn") return Cell::rnn;
  throw std::invalid_argument("CELL: expected lstm, gru, lbr_gru or rnn, got " + name);
}

int gates_of(Cell cell) { return cell == Cell::lstm ? 4 : cell == Cell::rnn ? 1 : 3; }

// One input: `count` values, read from IO_DIR/<label>.f32 when given, else uniform in
// [-scale, scale].
std::vector<float> input(const std::string& io_dir, const char* label, size_t count, float scale,
                         std::mt19937& engine) {
  std::vector<float> out(count);
  if (!io_dir.empty()) {
    std::ifstream in(io_dir + "/" + label + ".f32", std::ios::binary);
    in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(count * 4));
    if (in.gcount() != static_cast<std::streamsize>(count * 4))
      throw std::runtime_error(std::string(label) + ".f32: expected " + std::to_string(count) +
                               " float32 values");
    return out;
  }
  std::uniform_real_distribution<float> uniform(-scale, scale);
  for (float& v : out) v = uniform(engine);
  return out;
}

class Step {
 public:
  Step(Cell cell, Index T, Index N, Index I, Index H, bool bidirectional, const std::string& io_dir)
      : cell_(cell) {
    shape_.T = T;
    shape_.N = N;
    shape_.I = I;
    shape_.H = H;
    shape_.gates = gates_of(cell);
    shape_.bidirectional = bidirectional;
    shape_.has_input_weight = true;
    const Index D = shape_.D(), DH = shape_.DH(), DGH = shape_.DGH();
    std::mt19937 engine(0);
    const float scale = 1.0f / std::sqrt(static_cast<float>(H));
    const bool lstm = cell == Cell::lstm, lbr = cell == Cell::lbr_gru;
    source_ = input(io_dir, "source", T * N * I, 1.0f, engine);
    recurrent_ = input(io_dir, "recurrentWeight", D * shape_.GH() * H, scale, engine);
    input_ = input(io_dir, "inputWeight", DGH * I, scale, engine);
    bias_ = input(io_dir, "bias", DGH, scale, engine);
    state_ = input(io_dir, "initState", N * DH, scale, engine);
    if (lstm) cell_state_ = input(io_dir, "initCell", N * DH, scale, engine);
    if (lbr) secondary_ = input(io_dir, "secondaryBias", DH, scale, engine);
    output_.resize(T * N * DH);
    if (lstm) cell_output_.resize(T * N * DH);
    packed_ = rnngraph::pack_forward_weights<float>(D, shape_.gates, H, I, recurrent_.data(),
                                                    input_.data());
    args_.packed = packed_.get();
    args_.source = source_.data();
    args_.recurrentWeight = recurrent_.data();
    args_.inputWeight = input_.data();
    args_.bias = bias_.data();
    args_.initState = state_.data();
    args_.output = output_.data();
    if (lstm) {
      args_.initCell = cell_state_.data();
      args_.cellOutput = cell_output_.data();
    }
    if (lbr) args_.secondaryBias = secondary_.data();
    lstm_.bidirectional = gru_.bidirectional = rnn_.bidirectional = bidirectional;
    gru_.resetAfter = lbr;
    rnn_.activation = rnngraph::Activation::tanh;
  }
  Step(const Step&) = delete;  // args_ points into this Step's own vectors
  Step& operator=(const Step&) = delete;

  void run() {
    switch (cell_) {
      case Cell::lstm:
        return rnngraph::lstm_forward<float>(lstm_, shape_, args_);
      case Cell::gru:
      case Cell::lbr_gru:
        return rnngraph::gru_forward<float>(gru_, shape_, args_);
      case Cell::rnn:
        return rnngraph::single_gate_rnn_forward<float>(rnn_, shape_, args_);
    }
  }

  void write_outputs(const std::string& io_dir) const {
    driver::write_floats(io_dir, "output", output_.data(), output_.size());
    if (cell_ == Cell::lstm)
      driver::write_floats(io_dir, "cellOutput", cell_output_.data(), cell_output_.size());
  }

 private:
  Cell cell_;
  rnngraph::RNNShape shape_;
  rnngraph::LSTMOptions lstm_;
  rnngraph::GRUOptions gru_;
  rnngraph::SingleGateRNNOptions rnn_;
  std::vector<float> source_, recurrent_, input_, bias_, state_, cell_state_, secondary_;
  std::vector<float> output_, cell_output_;
  std::shared_ptr<const rnngraph::PackedForwardWeights<float>> packed_;
  rnngraph::ForwardArgs<float> args_;
};

}  // namespace

int main(int argc, char** argv) {
  return driver::run_or_time(
      "compiled_call", "CELL T N I H uni|bi THREADS BUDGET_S MIN_REPS SETTLE_S [IO_DIR]", argc,
      argv,
      [&](const std::string& io_dir) {
        rnngraph::set_num_threads(std::stoi(argv[7]));
        return std::make_unique<Step>(cell_of(argv[1]), std::stol(argv[2]), std::stol(argv[3]),
                                      std::stol(argv[4]), std::stol(argv[5]),
                                      std::string(argv[6]) == "bi", io_dir);
      },
      [](const Step&) { return std::string(); });
}
