"""Which logical CPUs share a physical core (a virtual machine need not say so: its lscpu may
report one thread per core on a host's hyper-threads). For each base CPU, a one-thread sgemm's
GFLOP/s there alone, then while the same sgemm runs on each other CPU k. A CPU whose load
takes the base CPU down to about half is its sibling; the rest show what the machine's noise
does to an FMA-bound loop.

    python3 benchmarks/shared_cores.py [--base 0,5] [--seconds 0.4]

Uses NumPy's BLAS on one thread (OPENBLAS_NUM_THREADS and friends set to 1 in each process),
n = 512 float32 (its operands fit the L2 cache: the loop is bound by the FMA units).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ONE_THREAD = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}


def rate(seconds: float) -> None:
    """In a child pinned by taskset: print this CPU's sgemm GFLOP/s over ``seconds``."""
    import numpy as np

    n = 512
    a = np.ones((n, n), np.float32)
    b = np.ones((n, n), np.float32)
    c = np.empty((n, n), np.float32)
    np.matmul(a, b, out=c)
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        np.matmul(a, b, out=c)
        calls += 1
    print(f"{2 * n**3 * calls / (time.perf_counter() - start) / 1e9:.1f}", flush=True)


def pinned(cpu: int, seconds: float) -> subprocess.Popen:
    return subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, __file__,
                             "--rate", str(seconds)], env={**os.environ, **ONE_THREAD},
                            stdout=subprocess.PIPE, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="0")
    parser.add_argument("--seconds", type=float, default=0.4)
    parser.add_argument("--rate", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rate:
        rate(args.rate)
        return
    cpus = sorted(os.sched_getaffinity(0))
    for base in (int(c) for c in args.base.split(",")):
        alone = pinned(base, args.seconds).communicate()[0].strip()
        beside = []
        for k in cpus:
            if k == base:
                continue
            other = pinned(k, args.seconds + 1.0)  # (its import and warm-up overlap too)
            time.sleep(0.5)
            beside.append(f"{k}:{pinned(base, args.seconds).communicate()[0].strip()}")
            other.kill()
            other.wait()
        print(f"CPU {base} alone {alone} GFLOP/s; while CPU k runs the same: {' '.join(beside)}")


if __name__ == "__main__":
    main()
