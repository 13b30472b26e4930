// The optimizer updates of Graph.adam, fused into one pass over the parameters on rnngraph's
// threads (NumPy makes about ten single-threaded passes with temporaries: on the 16-core
// machine that was about 3 ms of a 29 ms training step, benchmarks/bench_training_step.py).
#pragma once

#include "rnngraph/problem.hpp"

namespace rnngraph {

// Apple's Adam (MPSGraphOptimizerOps.h), element i of `count`, with lr the step's corrected
// rate lr[t]:
//   m = beta1·m0 + g·(1 − beta1),  v = beta2·v0 + (g·g)·(1 − beta2),
//   vmax = max(vmax0, v) (AMSGrad, when max_velocity is given),
//   x = x0 − (lr·m) / (sqrt(vmax or v) + epsilon).
// max_velocity and new_max_velocity are both null for plain Adam.
template <class S>
struct AdamArrays {
  const S* values;
  const S* momentum;
  const S* velocity;
  const S* max_velocity;
  const S* gradient;
  S* new_values;
  S* new_momentum;
  S* new_velocity;
  S* new_max_velocity;
};

template <class S>
void adam_update(Index count, const AdamArrays<S>& arrays, S lr, S beta1, S beta2, S epsilon);

}  // namespace rnngraph
