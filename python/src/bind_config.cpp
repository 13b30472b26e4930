#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "rnngraph/forced_paths.hpp"
#include "rnngraph/memory.hpp"
#include "rnngraph/threads.hpp"

namespace py = pybind11;

namespace rnngraph::bind {

namespace {

// Private switches for tests and measurements (rnngraph/forced_paths.hpp).
template <class Path>
Path path_from(const std::string& kind, const std::string& value,
               std::initializer_list<std::pair<const char*, Path>> names) {
  std::string all;
  for (const auto& [name, path] : names) {
    if (value == name) return path;
    all += (all.empty() ? "" : ", ") + std::string(name);
  }
  throw py::value_error("_force_paths: " + kind + ": expected one of " + all + ", got '" + value +
                        "'");
}

template <class Path>
std::string path_name(Path p, std::initializer_list<std::pair<const char*, Path>> names) {
  for (const auto& [name, path] : names) {
    if (p == path) return name;
  }
  return "?";
}

const std::initializer_list<std::pair<const char*, ProductPath>> kProducts = {
    {"auto", ProductPath::automatic},
    {"packed", ProductPath::packed},
    {"dot", ProductPath::dot},
    {"blas", ProductPath::blas},
    {"small", ProductPath::small}};
const std::initializer_list<std::pair<const char*, TilePath>> kTiles = {
    {"auto", TilePath::automatic},
    {"few", TilePath::few},
    {"some", TilePath::some},
    {"many", TilePath::many}};
const std::initializer_list<std::pair<const char*, SplitPath>> kSplits = {
    {"auto", SplitPath::automatic},
    {"serial", SplitPath::serial},
    {"rows", SplitPath::rows},
    {"team", SplitPath::team}};
const std::initializer_list<std::pair<const char*, SweepPath>> kSweeps = {
    {"auto", SweepPath::automatic},
    {"alternating", SweepPath::alternating},
    {"ascending", SweepPath::ascending}};
const std::initializer_list<std::pair<const char*, StepsPath>> kSteps = {
    {"auto", StepsPath::automatic}, {"units", StepsPath::units}, {"phases", StepsPath::phases}};

void bind_paths(py::module_& m) {
  m.def(
      "_force_paths",
      [](const std::string& product, const std::string& tile, const std::string& split,
         const std::string& sweep, const std::string& steps) {
        ForcedPaths p;
        p.product = path_from("product", product, kProducts);
        p.tile = path_from("tile", tile, kTiles);
        p.split = path_from("split", split, kSplits);
        p.sweep = path_from("sweep", sweep, kSweeps);
        p.steps = path_from("steps", steps, kSteps);
        force_paths(p);
      },
      py::kw_only(), py::arg("product") = "auto", py::arg("tile") = "auto",
      py::arg("split") = "auto", py::arg("sweep") = "auto", py::arg("steps") = "auto",
      "For tests: select the forward step's product kernel (auto, packed, dot, blas, small), the\n"
      "panel kernel's tile (auto, few, some, many), the work split (auto, serial, rows, team),\n"
      "the time loops' sweep of the weight panels (auto, alternating, ascending) and how a team\n"
      "runs each forward step (auto, units, phases) regardless of shape, process-wide; 'auto'\n"
      "leaves the choice to the thresholds.");
  m.def(
      "_forced_paths",
      [] {
        const ForcedPaths p = forced_paths();
        py::dict d;
        d["product"] = path_name(p.product, kProducts);
        d["tile"] = path_name(p.tile, kTiles);
        d["split"] = path_name(p.split, kSplits);
        d["sweep"] = path_name(p.sweep, kSweeps);
        d["steps"] = path_name(p.steps, kSteps);
        return d;
      },
      "The paths _force_paths set: {'product', 'tile', 'split', 'sweep', 'steps'}.");
  m.def(
      "_profile",
      [] {
        py::dict d;
        for (const auto& section : profile_sections()) {
          d[py::str(section.name)] = py::make_tuple(section.seconds, section.entries);
        }
        return d;
      },
      "For measurements: {section: (seconds, entries)} of the recurrent ops since the last "
      "reset (zeros unless RNNGRAPH_PROFILE was set at load).");
  m.def("_reset_profile", &reset_profile, "For measurements: zero the profile.");
  m.def("_parallel_thresholds", &parallel_thresholds,
        "For measurements: [(site, threshold)] of the work worth a second thread.");
  m.def("_set_parallel_threshold", &set_parallel_threshold, py::arg("site"), py::arg("value"),
        "For measurements: move a site's threshold (a negative value restores the default).");
  m.def("_set_blas_dimension_limit", &set_blas_dimension_limit, py::arg("limit"),
        "For tests: the largest size one BLAS call gets (0 restores int32's).");
}

}  // namespace

void bind_config(py::module_& m) {
  m.def(
      "blas_info",
      [] {
        const BlasInfo info = blas_info();
        py::dict d;
        d["library"] = info.library;
        d["config"] = info.config;
        d["core"] = info.core;
        d["num_threads"] = info.num_threads;
        return d;
      },
      "The linked BLAS: library, build config, detected core and thread count.");
  m.def(
      "cpu_supports",
      [](const std::string& level) {
        __builtin_cpu_init();
        if (level == "avx2") {
          return bool(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                      __builtin_cpu_supports("bmi2"));
        }
        if (level == "avx512") {
          return bool(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"));
        }
        throw py::value_error("cpu_supports: unknown level '" + level + "'");
      },
      py::arg("level"), "Whether this CPU runs the given kernel level (avx2, avx512).");
#if defined(__AVX512F__)
  m.attr("kernel_level") = "avx512";
#elif defined(__AVX2__)
  m.attr("kernel_level") = "avx2";
#else
  m.attr("kernel_level") = "baseline";
#endif
  m.def("set_num_threads", &set_num_threads, py::arg("n"), "Threads rnngraph's kernels use.");
  m.def("get_num_threads", &get_num_threads, "Threads rnngraph's kernels use.");
  m.def(
      "cpu_budget",
      [] {
        const CpuBudget b = cpu_budget();
        py::dict d;
        d["affinity"] = b.affinity;
        d["quota"] = b.quota;
        d["environment"] = b.environment;
        d["default"] = default_num_threads();
        return d;
      },
      "The CPUs this process may use: {'affinity', 'quota', 'environment', 'default'}.");
  m.def("_cgroup_quota", &cgroup_quota, py::arg("cgroup_file"), py::arg("root"),
        "For tests: the CPU quota (in CPUs, 0: none) of the cgroup that `cgroup_file` (the "
        "text of /proc/self/cgroup) names, under the cgroup file system at `root`.");
  m.def("_available_memory", &available_memory,
        "The bytes this process can still get (memory and swap, within its cgroup's limit); "
        "0 when unknown. A new block of 64 MiB or more is checked against it.");
  m.def("_memory_short_of", &memory_short_of, py::arg("bytes"),
        "0 when a new block of `bytes` passes the allocator's check (always below 64 MiB), "
        "else the bytes this process can still get.");
  m.def("_set_memory_reserve", &set_memory_reserve, py::arg("bytes"),
        "For tests: _available_memory() leaves out `bytes` more (0: nothing).");
  m.def("_cgroup_memory_left", &cgroup_memory_left, py::arg("cgroup_file"), py::arg("root"),
        "For tests: the lowest memory limit less usage (bytes; -1: none) over the cgroups that "
        "`cgroup_file` (the text of /proc/self/cgroup) names, under `root`.");
  m.def("_use_host_openmp", &use_host_openmp, py::arg("library"),
        "Run parallel sections on the already loaded OpenMP runtime at `library` (empty: on "
        "rnngraph's own workers); False if it is not loaded or not an OpenMP runtime.");
  m.def("_host_openmp", &host_openmp, "The adopted OpenMP runtime's path (empty: none).");
  m.def("_host_pool_stalls", &host_pool_stalls,
        "For measurements: (stalled regions, rests on rnngraph's own workers) of the adopted "
        "OpenMP pool.");
  m.def("_set_host_pool_fall_back", &set_host_pool_fall_back, py::arg("on"),
        "For measurements: whether a stalling adopted pool rests (the default: True).");
  m.def("_worker_moves", &worker_moves,
        "For tests and measurements: how many times rnngraph's workers moved to another core to "
        "make way for a team member descheduled on theirs.");
  m.def("_set_worker_moves", &set_worker_moves, py::arg("on"),
        "For measurements: whether workers make way by moving to another core (the default: "
        "True) or by yielding.");
  m.def("_worker_pulls", &worker_pulls,
        "For tests and measurements: how many times a waiting thread pulled a worker that held "
        "items, descheduled on another core, onto its own.");
  m.def("_set_worker_pulls", &set_worker_pulls, py::arg("on"),
        "For measurements: whether a waiting thread pulls such a worker onto its core (the "
        "default: True).");
  bind_paths(m);
  m.def("release_kept_memory", &release_kept_memory,
        "Return the memory kept between calls to the system now (done by itself when idle).");
  m.def("kept_bytes", &kept_bytes, "Bytes kept between calls for the next one.");
}

}  // namespace rnngraph::bind
