"""What a call of rnngraph costs beside its kernels, warm and right after a pass over more
bytes than the core's L2 holds (as a row's weights pass through it): an LSTM of a few
units, timed at five depths: Graph.run, the same run compiled (Executable.run, without the
feed dict and the plan's look-up), the op's compute (ops/recurrent.py, without
Graph.run's own Python), the core's prepared call that compute makes (the binding of the
inputs that change from run to run, the outputs and the driver's set-up), and, beside it,
the same call unprepared through rnn_forward (every input, the options and the shape read
and checked again).

    python3 benchmarks/call_overhead.py --threads 2 --processes 3 --evict-mib 12
    python3 benchmarks/call_overhead.py --lean-binding      # and the probe below

Each process prints, per depth, the median µs of --calls calls with nothing between them
("warm") and with a NumPy sum over --evict-mib MiB before each ("after a pass"); the medians
of the processes follow. ``--lean-binding`` adds two depths from a probe,
``drivers/lean_binding.cpp``: the same LSTM call on state prepared once, bound through
pybind11 and through a raw METH_FASTCALL function, its arrays unchecked (the floor of a
binding, not a safe one), built against the core's static library (compiled_call.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np
from ours import row_graph, row_values
from rows import BY_ID

# Row 3 (a decoder step) shrunk to 16 units: its kernels take about a microsecond.
ROW = dataclasses.replace(BY_ID[3], I=16, H=16)
SHAPE = {"T": ROW.T, "N": ROW.N, "I": ROW.I, "H": ROW.H}


def depths(threads: int) -> dict:
    """{depth: a call with no arguments}: Graph.run (the benchmark's own step, ours.py), the
    the same run compiled, the op's compute, its prepared core call, rnn_forward."""
    import rnngraph as rg
    from rnngraph.ops import recurrent

    rg.set_num_threads(threads)
    g, feeds, targets = row_graph(ROW, row_values(ROW))
    h = targets[0]

    def run() -> None:
        g.run(feeds=feeds, targetTensors=[h])

    executable = g.compile(feeds=list(feeds), targetTensors=[h])
    inputs = list(feeds.values())

    # The op's compute with the arrays Graph.run gives it, and the core calls it makes: the
    # call prepared at its first run (caught by wrapping prepare_forward for that run), and
    # the unprepared rnn_forward on the same arrays.
    op = h.op
    known = {**feeds, **{t: t.op.attrs["value"] for t in op.inputs.values()
                         if t is not None and t.op.kind == "constant"}}
    arrays = {label: None if t is None else known[t] for label, t in op.inputs.items()}
    prepare = recurrent._core.prepare_forward
    caught: dict = {}

    def catch(options, dense, run_labels, **kwargs):
        caught.update(options=options, dense=dense, kwargs=kwargs,
                      run_arrays=[dense[label] for label in run_labels])
        caught["prepared"] = prepare(options, dense, run_labels, **kwargs)
        return caught["prepared"]

    recurrent._core.prepare_forward = catch
    try:
        run()
    finally:
        recurrent._core.prepare_forward = prepare
    prepared, run_arrays = caught["prepared"], caught["run_arrays"]
    return {"Graph.run": run, "Executable.run": lambda: executable.run(inputs),
            "op compute": lambda: op.compute(arrays),
            "prepared run": lambda: prepared.run(*run_arrays),
            "rnn_forward": lambda: recurrent._core.rnn_forward(caught["options"], caught["dense"],
                                                               **caught["kwargs"])}


def lean_binding_depths() -> dict:
    """The probe's two calls of the same LSTM on the same values (drivers/lean_binding.cpp),
    built first."""
    import pybind11
    from compiled_call import BUILD, core_library, kernel_level, link_flags
    from driver_process import build_if_stale

    source = Path(__file__).resolve().parent / "drivers" / "lean_binding.cpp"
    library = core_library(kernel_level())
    module = BUILD / f"lean_binding{sysconfig.get_config_var('EXT_SUFFIX')}"
    build_if_stale(module, [source, library],
                   ["c++", "-O3", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden",
                    f"-I{pybind11.get_include()}", f"-I{sysconfig.get_paths()['include']}",
                    str(source), *link_flags(library)])
    sys.path.insert(0, str(BUILD))
    lean = importlib.import_module("lean_binding")
    v = row_values(ROW)
    prepared = lean.prepare(v["recurrentWeight"], v["inputWeight"], v["bias"], ROW.T, ROW.N,
                            ROW.I, ROW.H)
    x, h0, c0 = v["source"], v["initState"], v["initCell"]
    return {"probe: pybind11 call": lambda: lean.call(prepared, x, h0, c0),
            "probe: fastcall": lambda: lean.fast_call(prepared, x, h0, c0)}


def one_process(threads: int, calls: int, evict_mib: float, lean: bool = False) -> dict:
    """{depth: {"warm": µs, "after a pass": µs}}, medians of ``calls`` calls each."""
    block = np.ones(int(evict_mib * 2**20) // 4, np.float32)
    out = {}
    every = depths(threads) | (lean_binding_depths() if lean else {})
    for name, call in every.items():
        for _ in range(300):
            call()
        out[name] = {}
        for label, before in (("warm", lambda: None), ("after a pass", block.sum)):
            times = []
            for _ in range(calls):
                before()
                t0 = time.perf_counter_ns()
                call()
                times.append(time.perf_counter_ns() - t0)
            out[name][label] = statistics.median(times) / 1e3
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--processes", type=int, default=3)
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--evict-mib", type=float, default=12.0)
    p.add_argument("--lean-binding", action="store_true")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(one_process(a.threads, a.calls, a.evict_mib, a.lean_binding)))
        return
    if a.lean_binding:
        lean_binding_depths()  # built once, before the processes that time it
    runs = []
    for _ in range(a.processes):
        line = [sys.executable, __file__, "--child", "--threads", str(a.threads), "--calls",
                str(a.calls), "--evict-mib", str(a.evict_mib),
                *(["--lean-binding"] if a.lean_binding else [])]
        runs.append(json.loads(subprocess.run(line, capture_output=True, text=True,
                                              check=True).stdout.strip().splitlines()[-1]))
        print(json.dumps(runs[-1]))
    print(f"# {a.threads} thread(s), LSTM {SHAPE}, {a.calls} calls per cell, "
          f"a pass over {a.evict_mib:g} MiB; median µs of {a.processes} process medians")
    for name in runs[0]:
        cells = [f"{label} {statistics.median(run[name][label] for run in runs):.1f}"
                 for label in runs[0][name]]
        print(f"{name}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
