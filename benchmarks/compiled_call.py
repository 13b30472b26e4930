"""rnngraph's inference rows through its C++ core with no Python in between
(``drivers/compiled_call.cpp``), beside Graph.run and oneDNN's own primitive: the kernels'
time told from the call's overhead (Graph.run's Python and the bindings), which oneDNN's
driver, timing its primitive alone, does not have.

The driver links the core's static library of the kernel level rnngraph runs here
(``rnngraph._native``), built with CMake into ``benchmarks/build/core`` on first use (about
a minute on 2 cores; Eigen, pybind11 and scipy-openblas32 as for ``pip install .``).

    python3 benchmarks/compiled_call.py 3 --threads 2                 # one row, JSON
    python3 benchmarks/compiled_call.py --compare 2,3 --threads 2 --rounds 4
    python3 benchmarks/compiled_call.py --compare 3 --threads 2 --under-load 1

``--compare``: for each row, ROUNDS rounds of three processes, one library each, the order
rotating from round to round (the compiled call, Graph.run through ``ab_sweep.py``, oneDNN's
driver); prints each process's median in ms and each row's median of them. ``--under-load
K``: all of it beside K busy processes (load.py).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import onednn_peer
from load import busy
from rows import BY_ID, Row, parse_rows

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = HERE / "drivers" / "compiled_call.cpp"
TIMING = HERE / "drivers" / "call_timing.hpp"
BUILD = HERE / "build" / "core"  # build/ is ignored by git


def kernel_level() -> str:
    """The kernel level rnngraph runs here: 'avx512', 'avx2' or 'baseline'."""
    from rnngraph._native import core

    name = core.__name__.rsplit(".", 1)[-1]  # _core, _core_avx2, _core_avx512
    return name.removeprefix("_core_") if name != "_core" else "baseline"


def build(level: str) -> Path:
    """The driver linked against ``level``'s core library, built first where missing or
    older than its sources (CMake rebuilds the library itself when the core changed)."""
    import pybind11
    import scipy_openblas32

    target = "rnngraph_core" if level == "baseline" else f"rnngraph_core_{level}"
    if not (BUILD / "CMakeCache.txt").exists():
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release",
                        f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
                        f"-DPython_EXECUTABLE={sys.executable}"],
                       check=True, capture_output=True, text=True)
    subprocess.run(["cmake", "--build", str(BUILD), "--target", target, "-j"], check=True,
                   capture_output=True, text=True)
    library = BUILD / "cpp" / f"lib{target}.a"
    binary = BUILD / f"compiled_call_{level}"
    newest = max(p.stat().st_mtime for p in (SOURCE, TIMING, library))
    if not binary.exists() or binary.stat().st_mtime < newest:
        blas = scipy_openblas32.get_lib_dir()
        subprocess.run(["c++", "-O2", "-std=c++17", f"-I{ROOT / 'cpp' / 'include'}", str(SOURCE),
                        str(library), f"-L{blas}", f"-l{scipy_openblas32.get_library()}",
                        f"-Wl,-rpath,{blas}", "-pthread", "-ldl", "-o", str(binary)],
                       check=True, capture_output=True, text=True)
    return binary


def measure(row: Row, threads: int, timing: dict, level: str | None = None) -> dict:
    """The compiled call's timing of inference ``row``: median_ms, min_ms, mean_ms, p90_ms,
    reps (timing.py's spread, measured the same way in C++) and the kernel level."""
    if row.mode != "infer" or row.dtype != "float32":
        raise ValueError(f"row {row.id}: the compiled call times float32 inference rows only")
    level = level or kernel_level()
    line = [str(build(level)), onednn_peer.primitive(row.cell, row.resetAfter),
            *map(str, (row.T, row.N, row.I, row.H)), "bi" if row.bidirectional else "uni",
            str(threads), str(timing["budget_s"]), str(timing["min_reps"]), str(timing["settle_s"])]
    done = subprocess.run(line, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"compiled_call failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "level": level}


def graph_run_ms(row: Row, threads: int) -> float:
    """Graph.run's median for ``row`` in a process of its own (ab_sweep.py: ours.make_step
    timed by timing.measure, 1 s for an inference row)."""
    done = subprocess.run([sys.executable, str(HERE / "ab_sweep.py"), "graph", str(threads),
                           str(row.id)], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])[f"{row.id}@{threads}"]


def compare(rows: list[Row], threads: int, rounds: int, timing: dict) -> dict:
    """{row id: {library: [each process's median ms]}}, the libraries' processes taking
    turns within each round, the first of them rotating from round to round."""
    libraries = {"compiled call": lambda r: measure(r, threads, timing)["median_ms"],
                 "Graph.run": lambda r: graph_run_ms(r, threads)}
    if onednn_peer.available():
        libraries["oneDNN"] = lambda r: onednn_peer.measure(r, threads, timing)["median_ms"]
    names = list(libraries)
    out: dict = {}
    for row in rows:
        out[row.id] = {name: [] for name in names}
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                out[row.id][name].append(libraries[name](row))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("row", type=int, nargs="?")
    p.add_argument("--compare", metavar="ROWS", help="rows to compare, e.g. 2,3 or 1-6")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--budget", type=float, default=1.0)
    p.add_argument("--under-load", type=int, default=0, metavar="K")
    a = p.parse_args()
    timing = {"budget_s": a.budget, "min_reps": 10, "settle_s": 0.1}
    if a.compare is None:
        if a.row is None:
            p.error("give a row, or --compare ROWS")
        print(json.dumps(measure(BY_ID[a.row], a.threads, timing)))
        return
    rows = [row for row in parse_rows(a.compare) if row.mode == "infer" and row.dtype == "float32"]
    with busy(a.under_load):
        results = compare(rows, a.threads, a.rounds, timing)
    print(f"# {a.threads} thread(s), {a.under_load} busy processes, {a.rounds} rounds, kernel "
          f"level {kernel_level()}; median of the process medians [each process], ms")
    for row_id, by_library in results.items():
        cells = [f"{name} {statistics.median(ms):.4g} [{' '.join(f'{m:.4g}' for m in ms)}]"
                 for name, ms in by_library.items()]
        print(f"row {row_id}: " + "; ".join(cells))


if __name__ == "__main__":
    main()
