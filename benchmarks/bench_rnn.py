"""The rnngraph benchmark suite (shared/BENCHMARKS.md): rnngraph vs PyTorch CPU and ONNX
Runtime, and the same-run sgemm ceiling, at each thread count.

    python3 benchmarks/bench_rnn.py                      # all 15 rows, 1 and 2 threads
    python3 benchmarks/bench_rnn.py --quick              # a subset, fewer reps (< 2 min)
    python3 benchmarks/bench_rnn.py --rows 1,7-9 --threads 2 --out benchmarks/results/x.json

Writes the JSON (and a .md table beside it) to benchmarks/results/ and prints the table.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from pathlib import Path

import rnngraph

DEFAULT_THREADS = rnngraph.get_num_threads()  # read before anything here changes it

import machine
import ours
import peers
import threadpoolctl
import torch
from ceiling import blas_identity, sgemm_ceiling
from report import RESULTS, table
from report import ours as ours_entry
from rows import BY_ID, QUICK_ROWS, ROWS, parse_rows
from timing import measure_interleaved
from tqdm import tqdm

LIBRARIES = ("rnngraph", "torch", "onnxruntime")


def arguments(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help=f"rows {QUICK_ROWS}, short budgets")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rows", help="e.g. 1,2,7-9 (default: all, or the quick subset)")
    p.add_argument("--budget", type=float, help="seconds of repetitions per measurement")
    p.add_argument("--out", type=Path, help="results JSON (default benchmarks/results/<date>.json)")
    a = p.parse_args(argv)
    a.rows = parse_rows(a.rows) if a.rows else [BY_ID[i] for i in QUICK_ROWS] if a.quick else ROWS
    a.timing = ({"budget_s": 0.25, "min_reps": 5, "settle_s": 0.1, "rounds": 2} if a.quick
                else {"budget_s": 2.0, "min_reps": 10, "settle_s": 0.1, "rounds": 12})
    if a.budget is not None:
        a.timing["budget_s"] = a.budget
    return a


def make_step(library, row, threads):
    if library == "rnngraph":
        return ours.make_step(row)
    if library == "torch":
        return peers.torch_step(row)
    return peers.ort_step(row, threads)


def measure_entry(library, row, threads, timing) -> dict | None:
    """One library on one row: build outside timing, then measure; errors are recorded."""
    return measure_row([library], row, threads, timing).get(library)


def measure_row(libraries, row, threads, timing) -> dict:
    """The libraries' steps for one row, built outside timing and measured in turns
    (timing.measure_interleaved); a library that fails is recorded with its error."""
    steps, entries = {}, {}
    try:
        for library in libraries:
            try:
                step = make_step(library, row, threads)
            except Exception as error:  # noqa: BLE001 (a failing library must not end the run)
                entries[library] = {"error": f"{type(error).__name__}: {error}"}
                continue
            if step is not None:
                steps[library] = step
        try:
            entries.update(measure_interleaved(steps, **timing))
        except Exception as error:  # noqa: BLE001
            entries.update({lib: {"error": f"{type(error).__name__}: {error}"} for lib in steps})
    finally:
        steps.clear()
        gc.collect()
    for entry in entries.values():
        if "median_ms" in entry:
            entry["gflops"] = row.flop() / entry["median_ms"] / 1e6
    return entries


def record(row, threads, libs) -> dict:
    return {"row": row.id, "label": row.label, "shape": row.shape, "mode": row.mode,
            "threads": threads, "flop": row.flop(), "onednn_ms": row.onednn_ms, "libs": libs}


def derive(results: list, ceiling: dict) -> None:
    """Speed-ups (peer median / rnngraph median) and fractions of the same-run ceiling; the
    published oneDNN median (shared/BENCHMARKS.md, another run) is added as context."""
    at = {(r["row"], r["threads"]): r for r in results}
    for r in results:
        threads = r.get("threads_used", r["threads"])
        peer_record = at.get((r["row"], threads), r)
        if str(threads) in ceiling:
            for entry in r["libs"].values():
                if "gflops" in entry:
                    entry["fraction_of_ceiling"] = entry["gflops"] / ceiling[str(threads)]["gflops"]
        mine = ours_entry(r)
        r["speedup"] = {
            peer: entry["median_ms"] / mine["median_ms"]
            for peer, entry in peer_record["libs"].items()
            if peer in ("torch", "onnxruntime") and "median_ms" in entry and "median_ms" in mine}
        published = BY_ID[r["row"]].onednn(threads)
        if published and "median_ms" in mine:
            r["speedup"]["onednn_published"] = published / mine["median_ms"]


def main(argv=None):
    a = arguments(argv)
    torch.set_num_interop_threads(1)
    start_load = machine.load_average()
    jobs = sum(len([lib for lib in LIBRARIES if lib != "onnxruntime" or row.mode == "infer"])
               for row in a.rows) * len(a.threads)
    results, ceiling = [], {}
    with tqdm(total=jobs + 2 * len(a.threads) + (BY_ID[1] in a.rows), unit="meas",
              file=sys.stderr) as bar:
        if BY_ID[1] in a.rows:  # row 1 with rnngraph's untouched default thread settings
            bar.set_description("row 1 rnngraph default threads")
            entry = measure_entry("rnngraph", BY_ID[1], DEFAULT_THREADS, a.timing)
            results.append({**record(BY_ID[1], "default", {"rnngraph (default threads)": entry}),
                            "threads_used": DEFAULT_THREADS})
            bar.update()
        for n in a.threads:
            bar.set_description(f"{n} thr sgemm ceiling")
            start = sgemm_ceiling(n, budget_s=a.timing["budget_s"], min_reps=3)
            bar.update()
            # After the ceiling (which sets only OpenBLAS's count): rnngraph keeps its own.
            rnngraph.set_num_threads(n)
            torch.set_num_threads(n)
            for row in a.rows:
                libraries = [lib for lib in LIBRARIES if lib != "onnxruntime" or row.mode == "infer"]
                bar.set_description(f"{n} thr row {row.id}")
                results.append(record(row, n, measure_row(libraries, row, n, a.timing)))
                bar.update(len(libraries))
            end = sgemm_ceiling(n, budget_s=a.timing["budget_s"], min_reps=3)
            ceiling[str(n)] = max(start, end, key=lambda c: c["gflops"]) | {
                "start_gflops": start["gflops"], "end_gflops": end["gflops"]}
            bar.update()
    rnngraph.set_num_threads(DEFAULT_THREADS)
    derive(results, ceiling)

    stamp = machine.now()[:19].replace(":", "")
    out = a.out or RESULTS / f"{'quick' if a.quick else 'run'}-{stamp}.json"
    data = {
        "meta": {
            "date": machine.now(),
            "command": [sys.executable, *sys.argv],
            "git": machine.git(),
            "machine": machine.cpu(),
            "load_average_start": start_load,
            "load_average_end": machine.load_average(),
            "versions": machine.versions(),
            "blas": blas_identity(),
            "threadpool_info": threadpoolctl.threadpool_info(),
            "threads": {
                "measured": a.threads,
                "rnngraph_default": DEFAULT_THREADS,
                "torch_interop": torch.get_num_interop_threads(),
                "onnxruntime": {"intra_op_num_threads": "= threads", "inter_op_num_threads": 1,
                                "execution_mode": "sequential"},
                "environment": machine.thread_variables(),
            },
            "timing": a.timing | {"clock": "time.perf_counter", "warmup": "2 calls (1 if > 0.5 s)",
                                  "order": "libraries in turns, rounds rotating the order"},
            "quick": a.quick,
            "rows": [row.as_dict() for row in a.rows],
        },
        "ceiling": ceiling,
        "results": results,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    text = table(data)
    out.with_suffix(".md").write_text(text + "\n")
    print(text)
    print(f"\nwrote {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
