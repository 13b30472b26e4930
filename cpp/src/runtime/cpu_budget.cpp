// The CPUs this process may actually use: rnngraph's default thread count
// (rnngraph/threads.hpp: default_num_threads, cpu_budget).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sched.h>
#include <string>
#include <thread>

#include "rnngraph/threads.hpp"
#include "system_files.hpp"

namespace rnngraph {

namespace {

using system_files::number_at;
using system_files::read_text;

int affinity_cpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return static_cast<int>(std::thread::hardware_concurrency());
}

// A cgroup's own CPU quota in CPUs, from the files in `dir`; 0 when none is set or readable.
double own_quota(const std::string& dir, bool v2) {
  if (v2) {  // "max 100000" or "<quota> <period>"
    const std::string text = read_text(dir + "/cpu.max");
    if (text.empty() || text.compare(0, 3, "max") == 0) return 0;
    const double quota = number_at(text), period = number_at(text, text.find(' '));
    return quota > 0 && period > 0 ? quota / period : 0;
  }
  // (a quota of -1: none)
  const double quota = number_at(read_text(dir + "/cpu.cfs_quota_us")),
               period = number_at(read_text(dir + "/cpu.cfs_period_us"));
  return quota > 0 && period > 0 ? quota / period : 0;
}

// The lower of two quotas, 0 standing for none.
double lower_quota(double a, double b) { return a > 0 && (b <= 0 || a < b) ? a : b; }

// The lowest quota set on `path` (a cgroup's path, "/a/b") or an ancestor, under `mount`.
double lowest_quota(const std::string& mount, const std::string& path, bool v2) {
  double lowest = 0;
  system_files::for_cgroup_and_ancestors(mount, path, [&](const std::string& dir) {
    lowest = lower_quota(own_quota(dir, v2), lowest);
  });
  return lowest;
}

// Where a cgroup v1 hierarchy with the cpu controller may be mounted under `root`.
const char* const kCpuMounts[] = {"/cpu", "/cpu,cpuacct", "/cpuacct,cpu"};

// The CPU quota of this process's cgroup, in CPUs; 0 when there is none or it is unreadable.
double process_quota() { return cgroup_quota(read_text("/proc/self/cgroup"), "/sys/fs/cgroup"); }

int environment_threads() {
  const char* text = std::getenv("RNNGRAPH_NUM_THREADS");
  if (!text) return 0;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);  // (spaces before the number are skipped)
  const bool number = end != text;
  while (number && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;  // and after it
  return number && *end == '\0' && n >= 1 && n <= kMaxThreads ? static_cast<int>(n) : 0;
}

}  // namespace

double cgroup_quota(const std::string& cgroup_file, const std::string& root) {
  double lowest = 0;
  for (const system_files::CgroupLine& line : system_files::cgroup_lines(cgroup_file)) {
    if (line.controllers.empty()) {  // cgroup v2: "0::/path"
      lowest = lower_quota(lowest_quota(root, line.path, true), lowest);
    } else if (system_files::names_controller(line.controllers, "cpu")) {
      for (const char* mount : kCpuMounts)
        lowest = lower_quota(lowest_quota(root + mount, line.path, false), lowest);
    }
  }
  return lowest;
}

CpuBudget cpu_budget() {
  CpuBudget b;
  b.affinity = affinity_cpus();
  b.quota = process_quota();
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
