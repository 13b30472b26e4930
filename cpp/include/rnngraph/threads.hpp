// The linked BLAS (identity) and how many threads rnngraph's kernels use.
#pragma once

#include <string>
#include <utility>

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
// The most threads set_num_threads takes (and RNNGRAPH_NUM_THREADS): workers, once started,
// live as long as the process, so a count meant as "no limit" must not start millions.
constexpr int kMaxThreads = 4096;
// n in [1, kMaxThreads], else std::invalid_argument.
void set_num_threads(int n);
// Keeps the BLAS single-threaded: sets its count back to 1 if anything (threadpoolctl, a
// forked child's reset) changed it. Called before every BLAS call, so a limit another thread
// sets on this BLAS reaches no product of rnngraph's.
void pin_blas_threads();
int get_num_threads();
// The count get_num_threads starts from: RNNGRAPH_NUM_THREADS if set, else the CPUs this
// process may use (its affinity mask, lowered to its cgroup's CPU quota).
int default_num_threads();

// The CPU quota of the cgroup in `cgroup_file` (/proc/self/cgroup's text) under the cgroup
// file system mounted at `root` (/sys/fs/cgroup): the lowest of its own and its ancestors'
// (cgroup v2 cpu.max; v1 cpu.cfs_quota_us / cpu.cfs_period_us, under cpu, cpu,cpuacct or
// cpuacct,cpu), in CPUs; 0 when none is set or readable. A level that does not exist there
// (a container that sees its own cgroup at the root) is skipped.
double cgroup_quota(const std::string& cgroup_file, const std::string& root);

// What default_num_threads is made of.
struct CpuBudget {
  int affinity = 0;     // CPUs in this process's affinity mask (sched_getaffinity)
  double quota = 0;     // its cgroup's CPU quota in CPUs (0: none)
  int environment = 0;  // RNNGRAPH_NUM_THREADS (0: unset or not a positive integer)
};
CpuBudget cpu_budget();

// Parallel work on a host's OpenMP pool (runtime/host_openmp.hpp): adopts the OpenMP runtime
// at `library`, already loaded in this process (PyTorch's libgomp), so that rnngraph's
// parallel sections run on its threads instead of rnngraph's own workers; an empty path
// returns to them. Returns false, changing nothing, if the library is not loaded or lacks
// GOMP_parallel and omp_get_thread_num.
bool use_host_openmp(const std::string& library);
// The adopted library's path; empty when rnngraph's own workers run its parallel sections.
std::string host_openmp();
// For measurements: the adopted pool's stalled regions and the rests they started on
// rnngraph's own workers (tuning::kHostPoolStallUs); and turning those rests off or on.
std::pair<long long, long long> host_pool_stalls();
void set_host_pool_fall_back(bool on);
// For tests and measurements: how many times rnngraph's workers moved to another core to make
// way for a team member descheduled on theirs (runtime/core_moves.hpp); and turning those
// moves off or on (on by default).
long long worker_moves();
void set_worker_moves(bool on);
// For tests and measurements: how many times a thread waiting for a team member's items pulled
// that worker, descheduled on another core, onto its own (runtime/core_moves.hpp); and
// turning those pulls off or on (on by default).
long long worker_pulls();
void set_worker_pulls(bool on);

}  // namespace rnngraph
