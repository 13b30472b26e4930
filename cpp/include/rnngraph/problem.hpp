// What one RNN op call is: its sizes, its descriptor options and its buffers.
// Field names are the Swift labels so Python and C++ read alike.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "rnngraph/activation.hpp"

namespace rnngraph {

using Index = std::int64_t;

// Sizes of one call (SPEC.md section 1). All tensors are dense row-major with the
// bidirectional layouts of the SPEC table: initState/initCell [N, D·H], the mask
// expanded to [T, N, D·H], peephole [D·4H], secondaryBias [D·H].
struct RNNShape {
  Index T = 0, N = 0, I = 0, H = 0;
  int gates = 1;                  // G
  bool bidirectional = false;     // D = 2
  bool has_input_weight = false;  // without it the source holds D·G·H projected columns

  int D() const { return bidirectional ? 2 : 1; }
  Index GH() const { return gates * H; }
  Index DH() const { return D() * H; }
  Index DGH() const { return D() * GH(); }
  Index source_cols() const { return has_input_weight ? I : DGH(); }
};

// Each cell's descriptor options (SPEC.md section 3), and its gate count G.
struct SingleGateRNNOptions {
  static constexpr int gates = 1;
  bool reverse = false;
  bool bidirectional = false;
  Activation activation = Activation::relu;
};

struct LSTMOptions {
  static constexpr int gates = 4;  // [i, f, z, o], or [i, z, f, o] with forgetGateLast
  bool reverse = false;
  bool bidirectional = false;
  bool forgetGateLast = false;
  Activation inputGateActivation = Activation::sigmoid;
  Activation forgetGateActivation = Activation::sigmoid;
  Activation cellGateActivation = Activation::tanh;
  Activation outputGateActivation = Activation::sigmoid;
  Activation activation = Activation::tanh;
};

struct GRUOptions {
  static constexpr int gates = 3;  // [z, r, o], or [r, z, o] with resetGateFirst
  bool reverse = false;
  bool bidirectional = false;
  bool resetGateFirst = false;
  bool resetAfter = false;
  bool flipZ = false;
  Activation updateGateActivation = Activation::sigmoid;
  Activation resetGateActivation = Activation::sigmoid;
  Activation outputGateActivation = Activation::tanh;
};

// Whether a training forward op can keep hm·R_oᵀ + b2 of every step for its gradient op
// (the internal recurrentProduct below): only the GRU with resetAfter computes that product
// apart from the gates it feeds (SPEC.md section 5).
inline bool keeps_recurrent_product(const GRUOptions& o) { return o.resetAfter; }

template <class S>
class PackedForwardWeights;  // packed_weights.hpp

// Forward buffers. Optional inputs are nullptr when absent; zState is nullptr when
// the op is not training; cellOutput is used by the LSTM only (always required there,
// since the recurrence needs the previous cell).
template <class S>
struct ForwardArgs {
  // recurrentWeight and inputWeight packed earlier (a Graph's constants), or nullptr.
  const PackedForwardWeights<S>* packed = nullptr;
  const S* source = nullptr;
  const S* recurrentWeight = nullptr;
  const S* inputWeight = nullptr;
  const S* bias = nullptr;
  const S* initState = nullptr;
  const S* initCell = nullptr;
  const S* mask = nullptr;
  const S* peephole = nullptr;
  const S* secondaryBias = nullptr;
  S* output = nullptr;
  S* cellOutput = nullptr;
  S* zState = nullptr;
  // Internal, GRU resetAfter only (no Swift label): where each step's hm·R_oᵀ + b2 (SPEC.md
  // section 5) is kept, [T, N, D·H] as output, for a gradient op that then need not compute
  // it again. nullptr: not kept.
  S* recurrentProduct = nullptr;
};

// Gradient-op buffers: the saved forward tensors in, one gradient per given input out
// (a gradient pointer is nullptr exactly when its input is absent).
template <class S>
struct GradientArgs {
  const S* source = nullptr;
  const S* recurrentWeight = nullptr;
  const S* sourceGradient = nullptr;
  const S* zState = nullptr;
  const S* outputFwd = nullptr;
  const S* cellOutputFwd = nullptr;
  const S* stateGradient = nullptr;
  const S* cellGradient = nullptr;
  // Internal, LSTM only (no Swift label): dL/dc_t for every step, [T, N, D·H] as
  // cellOutputFwd; added to the cell gradient at each step t. nullptr: zeros.
  const S* cellSequenceGradient = nullptr;
  // Internal, GRU resetAfter only: hm·R_oᵀ + b2 for every step as its forward op kept it
  // (ForwardArgs::recurrentProduct). nullptr: computed from outputFwd here.
  const S* recurrentProduct = nullptr;
  const S* inputWeight = nullptr;
  const S* bias = nullptr;
  const S* initState = nullptr;
  const S* initCell = nullptr;
  const S* mask = nullptr;
  const S* peephole = nullptr;
  const S* secondaryBias = nullptr;

  S* sourceGrad = nullptr;
  S* recurrentWeightGrad = nullptr;
  S* inputWeightGrad = nullptr;
  S* biasGrad = nullptr;
  S* peepholeGrad = nullptr;
  S* initStateGrad = nullptr;
  S* initCellGrad = nullptr;
  S* secondaryBiasGrad = nullptr;
};

// std::invalid_argument("<op>: <what>") unless ok; the message is built only on failure (these
// checks run on every call: building it each time cost 1.7k of a one-step GRU call's 32k
// instructions, callgrind).
inline void require(bool ok, const char* op, const char* what) {
  if (!ok) throw std::invalid_argument(std::string(op) + ": " + what);
}

inline void validate_shape(const RNNShape& s, const char* op) {
  require(s.T >= 0 && s.N >= 0 && s.H >= 0 && s.I >= 0, op, "negative dimension");
  require(s.H > 0, op, "recurrentWeight: hidden size H must be positive");
  require(!s.has_input_weight || s.I > 0, op, "inputWeight: input size I must be positive");
  require(s.gates == 1 || s.gates == 3 || s.gates == 4, op, "internal: bad gate count");
}

}  // namespace rnngraph
