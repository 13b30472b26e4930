"""Every call's time, in several fresh processes per library, alternating: how a row's time
moves from one process to the next and within a process (the lowest median of a few
processes, which bench_rnn.py keeps per cell, hides both), idle or beside busy processes.

    python3 benchmarks/per_call_times.py --row 10 --threads 8 [--processes 6] [--calls 15]
                                         [--libraries rnngraph,torch,onednn] [--under-load K]
                                         [--out F.json]

Each process builds the row's step (ours.make_step, peers.torch_step for "torch", or the oneDNN
driver, benchmarks/onednn/rnn_driver.cpp, for "onednn"), calls it a few times untimed, then
times --calls calls one by one. With --under-load K, K busy processes (load.busy) run for the
whole measurement. Prints, per library, each process's median and min and its calls in order
(the first 20 of many), then the median and the lowest of the process medians, and over every
call of the library: median, mean, 90th percentile and the wall-time median, the call time
below which the calls spent half of their total time. Where a library makes some calls wait
for a descheduled thread, few calls carry much of the time: the call median then stays low
while the mean and the wall-time median rise. The last line is the JSON of every process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import load
import onednn_peer
import timing

HERE = Path(__file__).resolve().parent


def child(library: str, row_id: int, threads: int, calls: int) -> None:
    """In a fresh process: one JSON line of ``calls`` call times (ms) of the row's step."""
    sys.path.insert(0, str(HERE))
    from rows import BY_ID

    row = BY_ID[row_id]
    if library == "rnngraph":
        import ours

        import rnngraph

        rnngraph.set_num_threads(threads)
        step = ours.make_step(row)
    else:
        import peers
        import torch

        torch.set_num_threads(threads)
        step = peers.torch_step(row)
    for _ in range(3):
        step()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        step()
        times.append(1e3 * (time.perf_counter() - start))
    print(json.dumps({"library": library, "times_ms": times}), flush=True)


def onednn_times(row_id: int, threads: int, calls: int) -> list[float]:
    """In the oneDNN driver's own process: ``calls`` call times (ms), in order."""
    from rows import BY_ID

    row = BY_ID[row_id]
    line = onednn_peer.command(onednn_peer.primitive(row.cell, row.resetAfter), row.T, row.N,
                               row.I, row.H, row.bidirectional, row.mode == "train",
                               {"budget_s": 0, "min_reps": calls, "settle_s": 0})
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "times.txt"
        onednn_peer.run(line, threads, env={"RNN_DRIVER_TIMES": str(path)})
        return [float(t) for t in path.read_text().split()]


def process_times(library: str, row_id: int, threads: int, calls: int) -> list[float]:
    """One fresh process of ``library``: its ``calls`` call times (ms), in order."""
    if library == "onednn":
        return onednn_times(row_id, threads, calls)
    out = subprocess.run([sys.executable, __file__, "--child", library, "--row", str(row_id),
                          "--threads", str(threads), "--calls", str(calls)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["times_ms"]


def wall_time_median(times: list[float]) -> float:
    """The call time t such that calls of at most t took half of all the calls' time."""
    ordered = sorted(times)
    half, spent = sum(ordered) / 2, 0.0
    for t in ordered:
        spent += t
        if spent >= half:
            return t
    return ordered[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--libraries", default="rnngraph,torch")
    parser.add_argument("--under-load", type=int, default=0, metavar="K")
    parser.add_argument("--out")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.row, args.threads, args.calls)
        return
    libraries = args.libraries.split(",")
    runs: dict[str, list[list[float]]] = {lib: [] for lib in libraries}
    with load.busy(args.under_load) as busy:
        for _ in range(args.processes):
            for lib in libraries:  # the libraries' processes take turns, as in bench_rnn.py
                runs[lib].append(process_times(lib, args.row, args.threads, args.calls))
    print(f"row {args.row}, {args.threads} threads, {args.under_load} busy processes, ms")
    for lib, processes in runs.items():
        medians = [statistics.median(t) for t in processes]
        for times, median in zip(processes, medians):
            print(f"  {lib:9} median {median:8.3g} min {min(times):8.3g} | "
                  + " ".join(f"{t:.3g}" for t in times[:20]))
        every = [t for times in processes for t in times]
        pooled = timing.spread([t / 1e3 for t in every])  # (seconds in, ms out)
        print(f"  {lib:9} median of the process medians {statistics.median(medians):.3g}, "
              f"lowest {min(medians):.3g}")
        print(f"  {lib:9} every call ({pooled['reps']}): median {pooled['median_ms']:.3g}, "
              f"mean {pooled['mean_ms']:.3g}, p90 {pooled['p90_ms']:.3g}, "
              f"wall-time median {wall_time_median(every):.3g}")
    record = {"row": args.row, "threads": args.threads, "under_load": busy.record(), "runs": runs}
    if args.out:
        Path(args.out).write_text(json.dumps(record) + "\n")
    print(json.dumps(record))


if __name__ == "__main__":
    main()
