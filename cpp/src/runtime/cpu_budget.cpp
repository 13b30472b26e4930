// The CPUs this process may actually use: rnngraph's default thread count
// (rnngraph/threads.hpp: default_num_threads, cpu_budget).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sched.h>
#include <sstream>
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

// A cgroup's own CPU quota in CPUs, from the files in `dir`; 0 when none is set or readable.
double own_quota(const std::string& dir, bool v2) {
  if (v2) {  // "max 100000" or "<quota> <period>"
    std::ifstream f(dir + "/cpu.max");
    std::string quota;
    double period = 0;
    if (f >> quota >> period && quota != "max" && period > 0) {
      const double q = std::strtod(quota.c_str(), nullptr);
      if (q > 0) return q / period;
    }
    return 0;
  }
  std::ifstream q(dir + "/cpu.cfs_quota_us"), p(dir + "/cpu.cfs_period_us");
  double quota = 0, period = 0;  // (a quota of -1: none)
  return q >> quota && p >> period && quota > 0 && period > 0 ? quota / period : 0;
}

// The lowest quota set on `path` (a cgroup's path, "/a/b") or an ancestor, under `mount`.
double lowest_quota(const std::string& mount, std::string path, bool v2) {
  double lowest = 0;
  for (;;) {
    const double q = own_quota(path == "/" ? mount : mount + path, v2);
    if (q > 0 && (lowest == 0 || q < lowest)) lowest = q;
    if (path.empty() || path == "/") return lowest;
    const size_t cut = path.find_last_of('/');
    path = cut == 0 || cut == std::string::npos ? "/" : path.substr(0, cut);
  }
}

// Where a cgroup v1 hierarchy with the cpu controller may be mounted under `root`.
const char* const kCpuMounts[] = {"/cpu", "/cpu,cpuacct", "/cpuacct,cpu"};

// The CPU quota of this process's cgroup, in CPUs; 0 when there is none or it is unreadable.
double process_quota() {
  std::ifstream f("/proc/self/cgroup");
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return cgroup_quota(text, "/sys/fs/cgroup");
}

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
  auto lower = [&](double q) {
    if (q > 0 && (lowest == 0 || q < lowest)) lowest = q;
  };
  std::istringstream lines(cgroup_file);
  std::string line;
  while (std::getline(lines, line)) {  // "hierarchy-ID:controller-list:cgroup-path"
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {  // cgroup v2: "0::/path"
      lower(lowest_quota(root, path, true));
      continue;
    }
    std::istringstream names(controllers);
    std::string name;
    bool cpu = false;
    while (std::getline(names, name, ',')) cpu = cpu || name == "cpu";
    if (!cpu) continue;
    for (const char* mount : kCpuMounts) lower(lowest_quota(root + mount, path, false));
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
