"""How an rnngraph LSTM training step scales: time per step and peak memory, over T and N.

    python3 benchmarks/scaling.py [--quick] [--threads 1] [--reps 10] [--out FILE.json]

Sweeps (H = I = 256): T in {25, 50, 100, 200, 400} at N = 32, and N in {1, 8, 32, 128} at
T = 50. A training step is the same as in bench_rnn.py (ours.make_step: forward with
training=True + LSTMGradients returning every gradient, one g.run).

Peak memory: see MEMORY_METHOD below. Time per step is the median of --reps steps after
the first. A least-squares line (with R²) is fitted to time and memory over each sweep.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

MEMORY_METHOD = """Each point runs in a fresh subprocess. It first runs a tiny step
(T = N = 2, H = I = 8) so that one-time costs (OpenBLAS buffers, code paths) are paid, then
makes the point's feeds, reads VmRSS from /proc/self/status, resets the peak-RSS mark VmHWM
by writing 5 to /proc/self/clear_refs, runs ONE step and reads VmHWM again. peak = VmHWM -
VmRSS: everything the step itself touches (the C++ core's workspace, which tracemalloc cannot
see, the saved forward tensors and the returned gradients), inputs excluded. The subprocess
runs with MALLOC_MMAP_THRESHOLD_=65536: glibc then serves every buffer over 64 KiB by its own
mmap and unmaps it when freed, so no freed buffer stays resident to be reused unseen. Where
clear_refs cannot be written, the growth of getrusage's ru_maxrss is used instead (a lower
bound; the method used is recorded per point)."""

T_SWEEP, N_SWEEP, T_AT, N_AT, H = (25, 50, 100, 200, 400), (1, 8, 32, 128), 50, 32, 256


def _status_kb(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def measure_point(T: int, N: int, threads: int | None, reps: int) -> dict:
    """Runs inside the subprocess: one point's peak memory and time per step."""
    import ours
    from rows import Row

    import rnngraph

    if threads:
        rnngraph.set_num_threads(threads)
    # Prime code paths and OpenBLAS with tiny sizes, so no freed H-sized buffer stays resident.
    ours.make_step(Row(0, "LSTM", 2, 2, 8, 8, False, "train", "priming"))()
    step = ours.make_step(Row(0, "LSTM", T, N, H, H, False, "train", "scaling"))
    try:
        rss = _status_kb("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS
        method, before, peak = "VmHWM after clear_refs - VmRSS", rss, lambda: _status_kb("VmHWM")
    except OSError:
        def peak():
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        method, before = "ru_maxrss growth (lower bound)", peak()
    step()
    growth_kb = peak() - before
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    # Saved forward tensors (h, c, zState: 6H floats per t, n) and every gradient (I = H).
    minimum = 4 * (T * N * 6 * H + T * N * H + 4 * H * (2 * H + 1) + 2 * N * H)
    return {"T": T, "N": N, "H": H, "I": H, "threads": rnngraph.get_num_threads(),
            "median_ms": 1e3 * float(np.median(times)), "min_ms": 1e3 * min(times), "reps": reps,
            "peak_mb": growth_kb / 1024, "outputs_and_saved_mb": minimum / 2 ** 20,
            "memory_method": method}


def linear_fit(x, y) -> dict:
    """y ≈ intercept + slope·x, with R²."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    slope, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + slope * x)
    r2 = 1 - residual @ residual / ((y - y.mean()) @ (y - y.mean()))
    return {"slope": float(slope), "intercept": float(intercept), "r2": float(r2)}


def main(argv=None):
    p = argparse.ArgumentParser(description="rnngraph LSTM train scaling over T and N")
    p.add_argument("--threads", type=int, default=1,
                   help="rnngraph threads (default 1: the sweep shows shape, not peak speed, and "
                        "one thread keeps a shared 2-core machine's noise out of it)")
    p.add_argument("--reps", type=int, default=10, help="timed steps per point")
    p.add_argument("--out", type=Path)
    p.add_argument("--quick", action="store_true", help="T up to 200, N up to 32, 1 timed step")
    p.add_argument("--point", type=int, nargs=2, metavar=("T", "N"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.point:
        print(json.dumps(measure_point(*a.point, a.threads, a.reps)))
        return

    import machine
    from report import RESULTS
    from script_child import run_json

    t_sweep, n_sweep = (T_SWEEP[:-1], N_SWEEP[:-1]) if a.quick else (T_SWEEP, N_SWEEP)
    a.reps = 1 if a.quick else a.reps
    points = {}
    for T, N in [(T, N_AT) for T in t_sweep] + [(T_AT, N) for N in n_sweep]:
        if (T, N) in points:
            continue
        args = ["--point", str(T), str(N), "--reps", str(a.reps)]
        args += ["--threads", str(a.threads)] if a.threads else []
        points[T, N] = run_json(__file__, args,
                                env={**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"})
        pt = points[T, N]
        print(f"T={T:4d} N={N:4d}: {pt['median_ms']:8.1f} ms  peak {pt['peak_mb']:7.1f} MB",
              file=sys.stderr)
    sweeps = {"T": [points[T, N_AT] for T in t_sweep], "N": [points[T_AT, N] for N in n_sweep]}
    fits = {f"{key} vs {axis}": linear_fit([q[axis] for q in sweep], [q[key] for q in sweep])
            for axis, sweep in sweeps.items() for key in ("median_ms", "min_ms", "peak_mb")}
    data = {"meta": {"date": machine.now(), "command": [sys.executable, *sys.argv],
                     "git": machine.git(), "machine": machine.cpu(), "versions": machine.versions(),
                     "load_average_end": machine.load_average(), "quick": a.quick,
                     "memory_method": MEMORY_METHOD},
            "sweeps": sweeps, "fits": fits}
    out = a.out or RESULTS / f"scaling-{machine.now()[:19].replace(':', '')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1))
    for name, fit in fits.items():
        print(f"{name:18s} slope {fit['slope']:9.4f}  intercept {fit['intercept']:8.2f}  "
              f"R² {fit['r2']:.4f}")
    import matplotlib

    matplotlib.use("Agg")
    import plot

    print("wrote", out, *plot.save_scaling(data, out.with_suffix("")))


if __name__ == "__main__":
    main()
