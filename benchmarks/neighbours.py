"""rnngraph's next call right after other thread pools in the same process ran on every core
(issue: living beside PyTorch's OpenMP pool, ONNX Runtime's pool and NumPy's OpenBLAS).

    python3 benchmarks/neighbours.py [--rows 2,4,5,8] [--threads N] [--reps 200] [--out F.json]

For each row, two fresh processes measure rnngraph's step (ours.make_step) with --threads:
  quiet  - no other library ever runs in the process;
  after  - before every timed call, a PyTorch matmul (torch.set_num_threads(N)), an ONNX
           Runtime LSTM session run (intra_op_num_threads=N, spinning allowed as by default)
           and a NumPy matmul (its OpenBLAS, N threads) run back to back, so their workers
           are still spinning or just going to sleep when rnngraph's call starts.
Reports each median and after/quiet (the target: at most 1.2).
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


def other_pools(threads: int):
    """A call that runs PyTorch (a matmul), ONNX Runtime (an LSTM session) and NumPy's
    OpenBLAS (a matmul), each on ``threads`` threads, back to back."""
    import numpy as np
    import peers
    import threadpoolctl
    import torch
    from rows import BY_ID

    torch.set_num_threads(threads)
    threadpoolctl.threadpool_limits(threads, user_api="blas")
    a = torch.randn(512, 512)
    m = np.random.default_rng(0).standard_normal((512, 512))
    ort_run = peers.ort_step(BY_ID[4], threads)  # an LSTM inference session

    def run() -> None:
        torch.mm(a, a)
        ort_run()
        m @ m

    return run


def measure(mode: str, row_id: int, threads: int, reps: int) -> float:
    """Median ms of rnngraph's step in this process (``mode`` quiet or after)."""
    sys.path.insert(0, str(HERE))
    import ours
    from rows import BY_ID

    import rnngraph

    rnngraph.set_num_threads(threads)
    row = BY_ID[row_id]
    step = ours.make_step(row)
    neighbours = other_pools(threads) if mode == "after" else (lambda: None)
    for _ in range(3):
        neighbours()
        step()
    times = []
    for _ in range(reps):
        neighbours()
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="2,4,5,8")
    p.add_argument("--threads", type=int, default=None, help="default: rnngraph's default")
    p.add_argument("--reps", type=int, default=200)
    p.add_argument("--out", type=Path)
    p.add_argument("--child", nargs=2, metavar=("MODE", "ROW"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.threads is None:
        import rnngraph

        a.threads = rnngraph.get_num_threads()
    if a.child:
        print(measure(a.child[0], int(a.child[1]), a.threads, a.reps))
        return
    results = []
    print(f"| row | quiet ms | after neighbours ms | ratio | {a.threads} threads |")
    print("|---|---|---|---|---|")
    for row in [int(r) for r in a.rows.split(",")]:
        ms = {}
        for mode in ("quiet", "after"):
            out = subprocess.run([sys.executable, __file__, "--child", mode, str(row), "--threads",
                                  str(a.threads), "--reps", str(a.reps)],
                                 capture_output=True, text=True, check=True)
            ms[mode] = float(out.stdout.strip().splitlines()[-1])
        ratio = ms["after"] / ms["quiet"]
        results.append({"row": row, "threads": a.threads, "quiet_ms": ms["quiet"],
                        "after_ms": ms["after"], "ratio": ratio})
        print(f"| {row} | {ms['quiet']:.3f} | {ms['after']:.3f} | {ratio:.2f} | |", flush=True)
    if a.out:
        a.out.write_text(json.dumps({"command": sys.argv, "results": results}, indent=1))


if __name__ == "__main__":
    main()
