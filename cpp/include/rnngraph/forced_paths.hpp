// Forcing the kernels' paths, for tests: each path the thresholds of cpp/src/tuning.hpp
// choose between can be selected regardless of the problem's shape, so a test names the
// path it checks instead of choosing shapes on either side of a threshold. Process-wide;
// `automatic` everywhere (the default) leaves the choice to the thresholds.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "rnngraph/problem.hpp"

namespace rnngraph {

// The forward step's recurrent product hm·Rᵀ.
enum class ProductPath : int {
  automatic = 0,
  packed,  // Rᵀ packed into panels, the panel kernel (packed_gemm)
  dot,     // dot products along R's own rows (few rows, unpacked)
  blas,    // the BLAS (single-threaded inside the step)
  small,   // the small in-order kernel (tiny products)
};

// The register tile of the panel kernel (every packed product: forward and backward steps).
enum class TilePath : int {
  automatic = 0,
  few,   // 2 rows x 3 panels
  some,  // 6 rows x 2 panels, no prefetch (AVX-512; 2 rows x 2 panels elsewhere)
  many,  // 12-16 rows x 1 panel, prefetching the next panel
};

// How a call spends its threads on the time loops.
enum class SplitPath : int {
  automatic = 0,
  serial,  // every direction on the calling thread, one after the other
  rows,    // each direction's batch rows cut into chunks, one time loop per thread
  team,    // the threads share each step of one direction (columns, then rows), barriers
};

// Which way a time loop's steps sweep the packed weight panels (driver/step_runner.hpp,
// step_sweeps_from_back).
enum class SweepPath : int {
  automatic = 0,  // alternating
  alternating,    // every other step from the back, so each starts on what the last read
  ascending,      // every step from the front (for measurements: what alternating saves)
};

// How a team runs each forward step (driver/team_loops.hpp, steps_by_units); a cell whose step
// cannot run on a range of hidden units, or that has a dependent product, always takes phases.
enum class StepsPath : int {
  automatic = 0,
  units,   // one phase: items of hidden units, their product columns then their element-wise math
  phases,  // two phases: the product's columns in runs of units, then the rows' element-wise math
};

struct ForcedPaths {
  ProductPath product = ProductPath::automatic;
  TilePath tile = TilePath::automatic;
  SplitPath split = SplitPath::automatic;
  SweepPath sweep = SweepPath::automatic;
  StepsPath steps = StepsPath::automatic;
};

void force_paths(const ForcedPaths& paths);
ForcedPaths forced_paths();

// The thresholds that decide whether a piece of work gets a second thread (cpp/src/
// tuning.hpp), by site name, and a way to move one, for measurements only
// (benchmarks/thresholds.py). A negative value restores the default; an unknown site throws
// std::invalid_argument.
std::vector<std::pair<std::string, Index>> parallel_thresholds();
void set_parallel_threshold(const std::string& site, Index value);

// For tests only: the largest size (m, n, k, a leading dimension) handed to the BLAS in one
// call, whose int32 interface takes at most 2^31 - 1 (cpp/src/gemm.cpp cuts larger products);
// 0 or a negative value restores that.
void set_blas_dimension_limit(Index limit);

// Where the recurrent ops' time went since the last reset, for measurements only
// (benchmarks/profile_rows.py): (section, seconds, entries) per section of cpp/src/profile.hpp,
// all zeros unless RNNGRAPH_PROFILE was set when rnngraph loaded.
struct ProfileSection {
  std::string name;
  double seconds = 0;
  Index entries = 0;
};
std::vector<ProfileSection> profile_sections();
void reset_profile();

}  // namespace rnngraph
