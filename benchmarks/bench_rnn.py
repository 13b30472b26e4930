"""The rnngraph benchmark suite (docs/BENCHMARKS.md): rnngraph vs PyTorch CPU and ONNX
Runtime, and the same-run sgemm ceiling, at each thread count.

    python3 benchmarks/bench_rnn.py                      # all 15 rows, 1 and 2 threads
    python3 benchmarks/bench_rnn.py --quick              # a subset, short budgets
    python3 benchmarks/bench_rnn.py --rows 1,7-9 --threads 2 --out benchmarks/results/x.json
    python3 benchmarks/bench_rnn.py --quick --threads sweep          # 1, 2, 4, 8, 16 (≤ CPUs)
    python3 benchmarks/bench_rnn.py --quick --under-load 8 --threads 16   # idle, then loaded
    python3 benchmarks/bench_rnn.py --in-process         # one process, with the settle check
    python3 benchmarks/bench_rnn.py --rows 1-6 --threads sweep --processes 3   # best of 3

By default each library, at each thread count, runs in a fresh process of its own
(isolation.py, child.py), and so does the sgemm ceiling (at the start and end of each count).
--processes P runs each library's process P times and keeps each row's lowest median
(isolation.py; the sgemm ceiling stays one process at each end).
--in-process keeps the older mode: all libraries in this process, timed in turns, each
measurement after a settle check (settle.py). --under-load K measures everything idle, then
again while K busy processes run (load.py). --time-limit (540 s with --quick) and
--child-timeout bound the run. Writes the JSON, a .md table and PNG plots (with
matplotlib) to benchmarks/results/ (or beside --out) and prints the tables and the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

import machine
import progress
from load import RATIO_LIMIT, busy, compare
from records import derive, libraries_for
from report import RESULTS, load_table, table
from rows import BY_ID, QUICK_ROWS, ROWS, parse_rows

SWEEP = (1, 2, 4, 8, 16)


def thread_counts(words: list[str]) -> list[int]:
    """--threads: numbers, or 'sweep' = SWEEP capped at the CPUs this process may use."""
    if words == ["sweep"]:
        cpus = len(os.sched_getaffinity(0))
        return sorted({min(n, cpus) for n in SWEEP})
    try:
        counts = [int(word) for word in words]
    except ValueError:
        raise SystemExit(f"--threads: numbers or 'sweep', not {' '.join(words)}") from None
    if min(counts) < 1:
        raise SystemExit("--threads: at least 1")
    return list(dict.fromkeys(counts))


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a count of at least 1, got {value}")
    return value


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"rows {QUICK_ROWS}, short budgets")
    p.add_argument("--threads", nargs="+", default=["1", "2"],
                   help="thread counts, or 'sweep' (1 2 4 8 16, capped at the usable CPUs)")
    p.add_argument("--rows", help="e.g. 1,2,7-9 (default: all, or the quick subset)")
    p.add_argument("--budget", type=float,
                   help="seconds of repetitions per measurement (default 0.25 quick, 2 full)")
    p.add_argument("--out", type=Path, help="results JSON (default benchmarks/results/<date>.json)")
    p.add_argument("--processes", type=positive, default=1, metavar="P",
                   help="isolated mode: P processes per (library, threads); each row keeps "
                        "the lowest median")
    p.add_argument("--in-process", action="store_true",
                   help="all libraries in this process, timed in turns, with the settle check")
    p.add_argument("--under-load", type=int, metavar="K", default=0,
                   help="measure idle, then again under K busy processes")
    p.add_argument("--child-timeout", type=float,
                   help="seconds a measuring process may run (default 240 quick, 1800 full)")
    p.add_argument("--time-limit", type=float,
                   help="seconds for the whole run: later processes are stopped, their rows "
                        "recorded as errors (default 540 with --quick, else none)")
    a = p.parse_args(argv)
    if a.in_process and a.processes > 1:
        p.error("--processes: the isolated mode's (--in-process times every library in this one)")
    a.threads = thread_counts(a.threads)
    a.rows = parse_rows(a.rows) if a.rows else [BY_ID[i] for i in QUICK_ROWS] if a.quick else ROWS
    a.timing = ({"budget_s": 0.25, "min_reps": 5, "settle_s": 0.1, "rounds": 2} if a.quick
                else {"budget_s": 2.0, "min_reps": 10, "settle_s": 0.1, "rounds": 12})
    if a.budget is not None:
        a.timing["budget_s"] = a.budget
    if a.child_timeout is None:
        a.child_timeout = 240.0 if a.quick else 1800.0
    if a.time_limit is None:
        a.time_limit = 540.0 if a.quick else float("inf")
    return a


def measure(a: argparse.Namespace, bar: object) -> dict:
    """One pass over every library, row and thread count, in the chosen mode."""
    if a.in_process:
        import inprocess

        return inprocess.measure(a.rows, a.threads, a.timing, bar)
    import isolation

    return isolation.measure(a.rows, a.threads, a.timing, bar, a.child_timeout,
                             a.started + a.time_limit, a.processes)


def _threads_meta(a: argparse.Namespace, infos: dict) -> dict:
    rnngraph_info = infos.get("rnngraph") or infos.get("in-process") or {}
    torch_info = infos.get("torch") or infos.get("in-process") or {}
    return {"measured": a.threads,
            "rnngraph_default": rnngraph_info.get("rnngraph_threads"),
            "torch_interop": torch_info.get("torch_interop"),
            "onnxruntime": {"intra_op_num_threads": "= threads", "inter_op_num_threads": 1,
                            "execution_mode": "sequential"},
            "environment": machine.thread_variables()}


def assemble(a: argparse.Namespace, idle: dict, loaded: dict | None, load: dict | None,
             start_load: list) -> dict:
    """The results JSON: the idle pass as results / ceiling (as before), a loaded pass apart."""
    infos = idle["infos"]
    mode = "in-process" if a.in_process else "isolated"
    order = ("libraries in turns, rounds rotating the order, a settle check before each share"
             if a.in_process else "one process per (library, threads): sgemm, rnngraph, "
             "torch, onnxruntime, sgemm; settle CPU recorded, not waited for")
    meta = {
        "date": machine.now(), "command": [sys.executable, *sys.argv], "git": machine.git(),
        "machine": machine.cpu(), "load_average_start": start_load,
        "load_average_end": machine.load_average(), "versions": idle["versions"],
        "blas": (infos.get("sgemm") or infos.get("in-process") or {}).get("blas"),
        "threadpool_info": [{"library": lib, **pool} for lib, info in infos.items()
                            for pool in info.get("threadpool_info") or []],
        "threads": _threads_meta(a, infos),
        "timing": a.timing | {"clock": "time.perf_counter", "warmup": "2 calls (1 if > 0.5 s)",
                              "order": order, "child_timeout_s": a.child_timeout,
                              "processes_per_library": a.processes,
                              "time_limit_s": None if a.time_limit == float("inf")
                              else a.time_limit},
        "quick": a.quick, "mode": mode, "under_load_k": a.under_load,
        "load_averages": {k: v for k, v in (load or {}).items() if k.startswith("load_average")},
        "rows": [row.as_dict() for row in a.rows],
    }
    kept = ("ceiling", "results", "processes", "ceiling_errors")
    data = {"meta": meta, **{k: idle[k] for k in kept if k in idle}}
    if loaded is not None and load is not None:
        data["loaded"] = {k: loaded[k] for k in kept if k in loaded}
        data["under_load"] = load | {"ratio_limit": RATIO_LIMIT,
                                     "comparison": compare(idle["results"], loaded["results"])}
    return data


def write(data: dict, out: Path) -> str:
    """The JSON, the .md table(s) and the plots beside it; returns the printed text."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    text = table(data) + ("\n\n" + load_table(data) if "under_load" in data else "")
    out.with_suffix(".md").write_text(text + "\n")
    written = [out, out.with_suffix(".md")]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import plot
    except ImportError:
        text += "\n\nmatplotlib is not installed: no plots drawn."
    else:
        try:
            written += plot.save_results(data, out.with_suffix(""))
        except Exception as error:  # noqa: BLE001 (the results are written; plots can be redrawn)
            text += f"\n\nplots failed ({type(error).__name__}: {error}); see plot.py"
    return text + "\n\nwrote " + ", ".join(map(str, written))


def main(argv: list[str] | None = None) -> None:
    """Measure, write and print (see the module docstring)."""
    started = time.perf_counter()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that cleanup runs
    a = arguments(argv)
    a.started = started
    start_load, others = machine.load_average(), {"start": machine.busy_processes()}
    jobs = len(a.threads) * (2 + a.processes * sum(len(libraries_for(row)) for row in a.rows))
    jobs += BY_ID[1] in a.rows
    loaded = load = None
    bar = progress.bar(jobs * (2 if a.under_load else 1))
    try:
        idle = measure(a, bar)
        idle_s, idle_end = time.perf_counter() - started, machine.load_average()
        others["after_idle"] = machine.busy_processes()
        if a.under_load:
            with busy(a.under_load) as spinners:
                loaded = measure(a, bar)
            load = spinners.record() | {"load_average_idle_end": idle_end, "idle_s": idle_s,
                                        "loaded_s": time.perf_counter() - started - idle_s}
    finally:
        bar.close()
    for data in (idle, loaded):
        if data:
            derive(data["results"], data["ceiling"])
    data = assemble(a, idle, loaded, load, start_load)
    data["meta"]["other_busy_processes"] = others
    data["meta"]["wall_s"] = time.perf_counter() - started
    stem = "load" if a.under_load else "quick" if a.quick else "run"
    out = a.out or RESULTS / f"{stem}-{machine.now()[:19].replace(':', '')}.json"
    print(write(data, out))
    print(f"total wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
