"""Every call's time, in several fresh processes per library, alternating: how a row's time
moves from one process to the next and within a process (the lowest median of a few
processes, which bench_rnn.py keeps per cell, hides both).

    python3 benchmarks/per_call_times.py --row 10 --threads 8 [--processes 6] [--calls 15]
                                         [--libraries rnngraph,torch] [--out F.json]

Each process builds the row's step (ours.make_step, or peers.torch_step for "torch"), calls it
3 times untimed, then times --calls calls one by one. Prints, per library, each process's
median and min and its calls in order, then the median and the lowest of the process
medians; the last line is the JSON of every process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--processes", type=int, default=6)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--libraries", default="rnngraph,torch")
    parser.add_argument("--out")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.row, args.threads, args.calls)
        return
    libraries = args.libraries.split(",")
    runs: dict[str, list[list[float]]] = {lib: [] for lib in libraries}
    for _ in range(args.processes):
        for lib in libraries:  # the libraries' processes take turns, as in bench_rnn.py
            out = subprocess.run([sys.executable, __file__, "--child", lib, "--row", str(args.row),
                                  "--threads", str(args.threads), "--calls", str(args.calls)],
                                 capture_output=True, text=True, check=True).stdout
            runs[lib].append(json.loads(out.strip().splitlines()[-1])["times_ms"])
    print(f"row {args.row}, {args.threads} threads, ms")
    for lib, processes in runs.items():
        medians = [statistics.median(t) for t in processes]
        for times, median in zip(processes, medians):
            print(f"  {lib:9} median {median:8.3g} min {min(times):8.3g} | "
                  + " ".join(f"{t:.3g}" for t in times))
        print(f"  {lib:9} median of the process medians {statistics.median(medians):.3g}, "
              f"lowest {min(medians):.3g}")
    record = {"row": args.row, "threads": args.threads, "runs": runs}
    if args.out:
        Path(args.out).write_text(json.dumps(record) + "\n")
    print(json.dumps(record))


if __name__ == "__main__":
    main()
