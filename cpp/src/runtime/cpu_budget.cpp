// The CPUs this process may actually use: rnngraph's default thread count
// (rnngraph/threads.hpp: default_num_threads, cpu_budget).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fcntl.h>
#include <sched.h>
#include <string>
#include <thread>
#include <unistd.h>

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

// A small text file's contents (a cgroup or /proc file), empty when it cannot be read. POSIX
// reads and strtod below, not iostreams: on the 16-core machine (Ubuntu 24.04, Python 3.12)
// an ifstream's `>>` crashed inside the extension module, though not in a program.
std::string read_text(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char chunk[4096];
  for (;;) {
    const ssize_t got = ::read(fd, chunk, sizeof(chunk));
    if (got <= 0 || text.size() > (size_t(1) << 20)) break;
    text.append(chunk, static_cast<size_t>(got));
  }
  ::close(fd);
  return text;
}

// The first number in `text` from `from` on (after spaces), or 0 when there is none.
double number_at(const std::string& text, size_t from = 0) {
  if (from >= text.size()) return 0;
  const char* start = text.c_str() + from;
  char* end = nullptr;
  const double value = std::strtod(start, &end);
  return end == start ? 0 : value;
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
double lowest_quota(const std::string& mount, std::string path, bool v2) {
  double lowest = 0;
  for (;;) {
    lowest = lower_quota(own_quota(path == "/" ? mount : mount + path, v2), lowest);
    if (path.empty() || path == "/") return lowest;
    const size_t cut = path.find_last_of('/');
    path = cut == 0 || cut == std::string::npos ? "/" : path.substr(0, cut);
  }
}

// Where a cgroup v1 hierarchy with the cpu controller may be mounted under `root`.
const char* const kCpuMounts[] = {"/cpu", "/cpu,cpuacct", "/cpuacct,cpu"};

// Whether the comma-separated `controllers` name the cpu controller.
bool has_cpu(const std::string& controllers) {
  for (size_t at = 0; at <= controllers.size();) {
    const size_t comma = std::min(controllers.find(',', at), controllers.size());
    if (controllers.compare(at, comma - at, "cpu") == 0) return true;
    at = comma + 1;
  }
  return false;
}

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
  for (size_t at = 0; at < cgroup_file.size();) {
    size_t end = cgroup_file.find('\n', at);
    if (end == std::string::npos) end = cgroup_file.size();
    const std::string line = cgroup_file.substr(at, end - at);
    at = end + 1;
    // "hierarchy-ID:controller-list:cgroup-path"
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty()) {  // cgroup v2: "0::/path"
      lowest = lower_quota(lowest_quota(root, path, true), lowest);
    } else if (has_cpu(controllers)) {
      for (const char* mount : kCpuMounts)
        lowest = lower_quota(lowest_quota(root + mount, path, false), lowest);
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
