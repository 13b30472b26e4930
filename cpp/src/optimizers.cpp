// rnngraph/optimizers.hpp: one pass per block of elements, the blocks shared among threads
// (each element's arithmetic does not depend on the block, so results do not depend on the
// thread count).
#include "rnngraph/optimizers.hpp"

#include <cmath>

#include "parallel.hpp"

namespace rnngraph {

template <class S>
void adam_update(Index count, const AdamArrays<S>& a, S lr, S beta1, S beta2, S epsilon) {
  const S keep1 = S(1) - beta1, keep2 = S(1) - beta2;
  // A pass over the elements, cut as every such pass is (the "pass" site's threshold).
  const Index blocks = parallel_blocks(count, tuning::ParallelSite::pass, count);
  parallel_for(blocks, [&](Index b) {
    const Index begin = count * b / blocks, end = count * (b + 1) / blocks;
    for (Index i = begin; i < end; ++i) {
      const S g = a.gradient[i];
      const S m = beta1 * a.momentum[i] + g * keep1;
      const S v = beta2 * a.velocity[i] + (g * g) * keep2;
      S denominator = v;
      if (a.max_velocity) {
        const S kept = a.max_velocity[i];
        denominator = (kept < v || std::isnan(v)) ? v : kept;  // NumPy's maximum: NaN wins
        a.new_max_velocity[i] = denominator;
      }
      a.new_momentum[i] = m;
      a.new_velocity[i] = v;
      a.new_values[i] = a.values[i] - (lr * m) / (std::sqrt(denominator) + epsilon);
    }
  });
}

template void adam_update<float>(Index, const AdamArrays<float>&, float, float, float, float);
template void adam_update<double>(Index, const AdamArrays<double>&, double, double, double, double);

}  // namespace rnngraph
