// The linked BLAS (identity) and how many threads rnngraph's kernels use.
#pragma once

#include <string>

namespace rnngraph {

struct BlasInfo {
  std::string library;  // e.g. "scipy-openblas32"
  std::string config;   // OpenBLAS's own build string (version, DYNAMIC_ARCH, ...)
  std::string core;     // kernel family chosen at load time, e.g. "SkylakeX"
  int num_threads = 1;  // the BLAS's own threads (rnngraph keeps it single-threaded)
};

// rnngraph owns its parallelism: the BLAS it links always runs single-threaded (its idle
// worker threads would otherwise spin on the cores our own threads need), and
// set_num_threads/get_num_threads set how many threads rnngraph's kernels use.
BlasInfo blas_info();
void set_num_threads(int n);
int get_num_threads();
// The count get_num_threads starts from: RNNGRAPH_NUM_THREADS if set, else the CPUs this
// process may use (its affinity mask, lowered to its cgroup's CPU quota).
int default_num_threads();

// What default_num_threads is made of.
struct CpuBudget {
  int affinity = 0;     // CPUs in this process's affinity mask (sched_getaffinity)
  double quota = 0;     // its cgroup's CPU quota in CPUs (0: none)
  int environment = 0;  // RNNGRAPH_NUM_THREADS (0: unset or not a positive integer)
};
CpuBudget cpu_budget();

}  // namespace rnngraph
