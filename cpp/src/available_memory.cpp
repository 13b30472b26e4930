// The memory this process can still get (rnngraph/memory.hpp: available_memory), for the
// check of a large new block before it is allocated (memory.cpp).
#include <algorithm>
#include <atomic>
#include <string>

#include "rnngraph/memory.hpp"
#include "system_files.hpp"

namespace rnngraph {

namespace {

using system_files::number_at;
using system_files::read_text;

// Bytes a cgroup's own memory limit leaves, from the files in `dir`; -1 when it sets none or
// they cannot be read.
double own_memory_left(const std::string& dir, bool v2) {
  const std::string limit_text = read_text(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  const std::string usage_text =
      read_text(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
  if (limit_text.empty() || usage_text.empty() || limit_text.compare(0, 3, "max") == 0) return -1;
  const double limit = number_at(limit_text), usage = number_at(usage_text);
  // (cgroup v1 writes "no limit" as a page-rounded 2^63 - 1)
  if (limit <= 0 || limit >= 0x1p62) return -1;
  return std::max(0.0, limit - usage);
}

std::atomic<std::size_t> reserve{0};  // set_memory_reserve

// The lower of two amounts, -1 standing for none.
double lower_left(double a, double b) { return a >= 0 && (b < 0 || a < b) ? a : b; }

}  // namespace

double cgroup_memory_left(const std::string& cgroup_file, const std::string& root) {
  double lowest = -1;
  for (const system_files::CgroupLine& line : system_files::cgroup_lines(cgroup_file)) {
    const bool v2 = line.controllers.empty();  // "0::/path"
    if (!v2 && !system_files::names_controller(line.controllers, "memory")) continue;
    system_files::for_cgroup_and_ancestors(
        v2 ? root : root + "/memory", line.path,
        [&](const std::string& dir) { lowest = lower_left(own_memory_left(dir, v2), lowest); });
  }
  return lowest;
}

std::size_t available_memory() {
  const std::string meminfo = read_text("/proc/meminfo");
  const double available = system_files::field(meminfo, "MemAvailable:"),
               swap = system_files::field(meminfo, "SwapFree:");
  if (available < 0) return 0;  // unknown (not Linux, or a kernel before 3.14)
  double bytes = (available + std::max(0.0, swap)) * 1024;  // (/proc/meminfo counts kB)
  bytes = lower_left(cgroup_memory_left(read_text("/proc/self/cgroup"), "/sys/fs/cgroup"), bytes);
  bytes -= static_cast<double>(reserve.load(std::memory_order_relaxed));
  return static_cast<std::size_t>(std::max(1.0, bytes));
}

void set_memory_reserve(std::size_t bytes) { reserve.store(bytes, std::memory_order_relaxed); }

}  // namespace rnngraph
