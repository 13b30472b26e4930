// The CPUs this process may actually use: rnngraph's default thread count
// (rnngraph/threads.hpp: default_num_threads, cpu_budget).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sched.h>
#include <string>
#include <thread>

#include "rnngraph/threads.hpp"

namespace rnngraph {

namespace {

int affinity_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return static_cast<int>(std::thread::hardware_concurrency());
}

// The CPU quota of this process's cgroup, in CPUs; 0 when there is none or it is unreadable.
double cgroup_quota() {
  {  // cgroup v2: "max 100000" or "<quota> <period>"
    std::ifstream f("/sys/fs/cgroup/cpu.max");
    std::string quota;
    double period = 0;
    if (f >> quota >> period && quota != "max" && period > 0) {
      const double q = std::strtod(quota.c_str(), nullptr);
      if (q > 0) return q / period;
    }
  }
  {  // cgroup v1
    std::ifstream q("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
        p("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    double quota = 0, period = 0;
    if (q >> quota && p >> period && quota > 0 && period > 0) return quota / period;
  }
  return 0;
}

int environment_threads() {
  const char* text = std::getenv("RNNGRAPH_NUM_THREADS");
  if (!text) return 0;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && n >= 1 && n <= 4096 ? static_cast<int>(n) : 0;
}

}  // namespace

CpuBudget cpu_budget() {
  CpuBudget b;
  b.affinity = affinity_cpus();
  b.quota = cgroup_quota();
  b.environment = environment_threads();
  return b;
}

int default_num_threads() {
  const CpuBudget b = cpu_budget();
  if (b.environment > 0) return b.environment;
  int n = std::max(1, b.affinity);
  if (b.quota > 0) n = std::min(n, std::max(1, static_cast<int>(std::ceil(b.quota))));
  return n;
}

}  // namespace rnngraph
