"""rnngraph's inference rows through its C++ core with no Python in between
(``drivers/compiled_call.cpp``), beside the Python calls (Executable.run and Graph.run) and
oneDNN's own primitive: the kernels' time told from the call's overhead (the Python and the
bindings), which oneDNN's driver, timing its primitive alone, does not have.

The driver links the core's static library of the kernel level rnngraph runs here
(``rnngraph.config.kernel_level``), built with CMake into ``benchmarks/build/core`` on first
use (about 30 s on 2 cores; Eigen, CMake, pybind11 and scipy-openblas32 as for
``pip install ".[test]"``).

    python3 benchmarks/compiled_call.py 3 --threads 2                 # one row, JSON
    python3 benchmarks/compiled_call.py --compare 2,3 --threads 2 --rounds 4
    python3 benchmarks/compiled_call.py --compare 3 --threads 2 --under-load 1

``--compare``: for each row, ROUNDS rounds of four processes, one call each, the order
rotating from round to round (the compiled call, Executable.run, Graph.run, oneDNN's
driver), each timed
alike (timing.measure's budget, repetitions and settle); prints each process's median in ms
and each row's median of them. ``--under-load K``: all of it beside K busy processes (load.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import onednn_peer
from driver_process import SHARED_HEADER, build_if_stale, cmake, run_json
from load import busy
from rows import BY_ID, Row, parse_rows
from timing import rotated

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = HERE / "drivers" / "compiled_call.cpp"
BUILD = HERE / "build" / "core"  # build/ is ignored by git
ONLY = "the compiled call times float32 inference rows only"


def kernel_level() -> str:
    """The kernel level rnngraph runs here: 'avx512', 'avx2' or 'baseline'."""
    from rnngraph.config import kernel_level as level

    return level()


def _configured() -> bool:
    """Whether BUILD holds a configured tree for this interpreter."""
    cache = BUILD / "CMakeCache.txt"
    return cache.exists() and f"Python_EXECUTABLE:UNINITIALIZED={sys.executable}\n" in (
        cache.read_text())  # (as a -D without a type records it)


def core_library(level: str) -> Path:
    """The core's static library of ``level``, configured (for this interpreter) and built
    with CMake where missing or stale; RuntimeError with CMake's last words if that fails."""
    import pybind11

    target = "rnngraph_core" if level == "baseline" else f"rnngraph_core_{level}"
    steps = [[cmake(), "--build", str(BUILD), "--target", target, "-j", str(os.cpu_count() or 1)]]
    if not _configured():
        shutil.rmtree(BUILD, ignore_errors=True)  # (a tree of another interpreter, or broken)
        steps.insert(0, [cmake(), "-S", str(ROOT), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release",
                         f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
                         f"-DPython_EXECUTABLE={sys.executable}"])
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            if step is not steps[-1]:
                shutil.rmtree(BUILD, ignore_errors=True)  # a failed configure is not reused
            tail = (done.stderr.strip() or done.stdout.strip())[-2000:]
            raise RuntimeError(f"building rnngraph's core for the compiled call failed: {tail}")
    return BUILD / "cpp" / f"lib{target}.a"


def link_flags(library: Path) -> list[str]:
    """What a program or module calling the core needs on its compile line after its source:
    the core's headers, its static ``library`` (core_library) and the OpenBLAS it calls."""
    import scipy_openblas32

    blas = scipy_openblas32.get_lib_dir()
    return [f"-I{ROOT / 'cpp' / 'include'}", str(library), f"-L{blas}",
            f"-l{scipy_openblas32.get_library()}", f"-Wl,-rpath,{blas}", "-pthread", "-ldl"]


def build(level: str) -> Path:
    """The driver linked against ``level``'s core library (build_if_stale)."""
    library = core_library(level)
    return build_if_stale(BUILD / f"compiled_call_{level}", [SOURCE, SHARED_HEADER, library],
                          ["c++", "-O2", "-std=c++17", str(SOURCE), *link_flags(library)])


def command(row: Row, threads: int, timing: dict, io_dir: Path | None = None) -> list[str]:
    """The driver's command line for inference ``row``: timed with ``timing`` (budget_s,
    min_reps, settle_s), or one untimed call on the arrays in ``io_dir``."""
    if row.mode != "infer" or row.dtype != "float32":
        raise ValueError(f"row {row.id}: {ONLY}")
    line = [str(build(kernel_level())), onednn_peer.primitive(row.cell, row.resetAfter),
            *map(str, (row.T, row.N, row.I, row.H)), "bi" if row.bidirectional else "uni",
            str(threads), str(timing["budget_s"]), str(timing["min_reps"]),
            str(timing["settle_s"])]
    return line + ([str(io_dir)] if io_dir is not None else [])


def measure(row: Row, threads: int, timing: dict) -> dict:
    """The compiled call's timing of inference ``row``: median_ms, min_ms, mean_ms, p90_ms,
    reps (timing.py's spread, measured the same way in C++) and the kernel level."""
    return {**run_json(command(row, threads, timing)), "level": kernel_level()}


def graph_run(row: Row, threads: int, timing: dict, call: str = "Graph.run") -> dict:
    """The Python step's timing of ``row`` in this process (ours.make_step with ``call``,
    timing.measure)."""
    from ours import make_step
    from timing import measure as measure_step

    import rnngraph as rg

    rg.set_num_threads(threads)
    return measure_step(make_step(row, call=call), budget_s=timing["budget_s"],
                        min_reps=timing["min_reps"], settle_s=timing["settle_s"])


def graph_run_ms(row: Row, threads: int, timing: dict, call: str = "Graph.run") -> float:
    """graph_run's median in a process of its own."""
    line = [sys.executable, __file__, str(row.id), "--python-call", call, "--threads",
            str(threads), "--budget", str(timing["budget_s"])]
    return run_json(line)["median_ms"]


def compare(rows: list[Row], threads: int, rounds: int, timing: dict) -> dict:
    """{row id: {library: [each process's median ms]}}, the libraries' processes taking
    turns within each round, the first of them rotating from round to round."""
    libraries = {"compiled call": lambda r: measure(r, threads, timing)["median_ms"],
                 "Executable.run": lambda r: graph_run_ms(r, threads, timing, "Executable.run"),
                 "Graph.run": lambda r: graph_run_ms(r, threads, timing)}
    if onednn_peer.available():
        libraries["oneDNN"] = lambda r: onednn_peer.measure(r, threads, timing)["median_ms"]
    out: dict = {}
    for row in rows:
        out[row.id] = {name: [] for name in libraries}
        for r in range(rounds):
            for name in rotated(list(libraries), r):
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
    p.add_argument("--python-call", choices=("Graph.run", "Executable.run"), help=argparse.SUPPRESS)
    a = p.parse_args()
    timing = {"budget_s": a.budget, "min_reps": 10, "settle_s": 0.2}  # timing.measure's
    if a.compare is None:
        if a.row is None:
            p.error("give a row, or --compare ROWS")
        if a.python_call:
            print(json.dumps(graph_run(BY_ID[a.row], a.threads, timing, a.python_call)))
        else:
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
