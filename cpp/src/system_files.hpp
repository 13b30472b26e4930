// Reading the kernel's small text files (/proc, cgroup controls) without iostreams, and the
// lines of /proc/self/cgroup: shared by the CPU budget (runtime/cpu_budget.cpp) and the
// memory check (available_memory.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rnngraph::system_files {

// A small text file's contents, empty when it cannot be read. POSIX reads, not iostreams: on
// the 16-core machine (Ubuntu 24.04, Python 3.12) an ifstream's `>>` crashed inside the
// extension module, though not in a program.
std::string read_text(const std::string& path);

// The first number in `text` from `from` on (after spaces), or 0 when there is none.
double number_at(const std::string& text, std::size_t from = 0);

// The number after `key` (a line's start such as "MemAvailable:") in `text`; -1 when absent.
double field(const std::string& text, const std::string& key);

// One line of /proc/self/cgroup, "hierarchy-ID:controller-list:cgroup-path"; cgroup v2's
// line has no controllers.
struct CgroupLine {
  std::string controllers;
  std::string path;
};
std::vector<CgroupLine> cgroup_lines(const std::string& cgroup_file);

// Whether the comma-separated `controllers` name `controller`.
bool names_controller(const std::string& controllers, const std::string& controller);

// visit(dir) for the directory of the cgroup at `path` ("/a/b") under `mount`, then for each
// of its ancestors' up to the mount itself: a limit set on any of them applies.
template <class Visit>
void for_cgroup_and_ancestors(const std::string& mount, std::string path, Visit visit) {
  for (;;) {
    visit(path == "/" ? mount : mount + path);
    if (path.empty() || path == "/") return;
    const std::size_t cut = path.find_last_of('/');
    path = cut == 0 || cut == std::string::npos ? "/" : path.substr(0, cut);
  }
}

}  // namespace rnngraph::system_files
