"""What a pause alone does to the next call, with no other library and no worker involved:
rnngraph's call for a row and a NumPy product that reads as many weight bytes, each timed
right after the calling thread spun for a while in Python (its core never idles, so neither
a sleeping worker nor a core waking from idle is in the time).

    python3 benchmarks/pause_cost.py [--rows 2,4] [--threads 1] [--pauses 0,0.1,1,5,25]
                                     [--reps 60] [--settings auto relay=off] [--rounds 1]
                                     [--out F.json]

neighbours.py's "paused" case sleeps before each call and finds it several times slower than
calls back to back. If the NumPy product, which has no threads (OPENBLAS_NUM_THREADS=1 is set
here before NumPy loads), slows down alike as the pause grows, what the pause costs is the
weights' trip back from memory, not rnngraph's runtime. Prints, per row, each step's median
(ms) after each pause. --settings compares the runtime's switches (split_ab.py --path switch's
values, e.g. "relay=off"), taken in turns within each of --rounds rounds; each cell is then the
median of the rounds' medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before NumPy loads: its product on this thread
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import ours
from rows import GATES, Row, parse_rows
from split_ab import apply, forced

import rnngraph as rg


def weight_bytes(row: Row) -> int:
    """Bytes of inputWeight and recurrentWeight the row's forward reads at each call."""
    D = 2 if row.bidirectional else 1
    return D * GATES[row.cell] * row.H * (row.I + row.H) * np.dtype(row.dtype).itemsize


def numpy_product(nbytes: int):
    """A matrix-vector product over a float32 matrix of ``nbytes`` (1024 columns)."""
    rows = max(1, nbytes // (4 * 1024))
    w = np.random.default_rng(0).standard_normal((rows, 1024)).astype(np.float32)
    x = np.ones(1024, np.float32)
    return lambda: w @ x


def after_pauses(step, pauses_ms: list[float], reps: int) -> dict[str, float]:
    """Median ms of ``step()`` right after a busy pause of each length."""
    for _ in range(20):
        step()
    out = {}
    for pause in pauses_ms:
        times = []
        for _ in range(reps):
            end = time.perf_counter() + pause / 1e3
            while time.perf_counter() < end:
                pass
            start = time.perf_counter()
            step()
            times.append(1e3 * (time.perf_counter() - start))
        out[f"{pause:g}"] = statistics.median(times)
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", default="2,4", help="e.g. 2,4 or 2-5")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--pauses", default="0,0.1,1,5,25", help="ms of spinning before each call")
    p.add_argument("--reps", type=int, default=60)
    p.add_argument("--settings", nargs="+", default=["auto"],
                   help="runtime switches to compare, as split_ab.py --path switch takes them")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    rg.set_num_threads(a.threads)
    pauses = [float(x) for x in a.pauses.split(",")]
    results = []
    print(f"rnngraph on {a.threads} thread(s), NumPy on 1; median ms after a busy pause of "
          + ", ".join(f"{x:g}" for x in pauses) + " ms")
    for row in parse_rows(a.rows):
        nbytes = weight_bytes(row)
        step = ours.make_step(row)
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in a.settings}
        for r in range(a.rounds):
            for name in a.settings if r % 2 == 0 else a.settings[::-1]:
                apply("switch", forced("switch", name))
                rounds[name].append(after_pauses(step, pauses, a.reps))
        apply("switch", {})
        steps = {f"rnngraph {name}" if len(a.settings) > 1 else "rnngraph":
                 {k: statistics.median(m[k] for m in measured) for k in measured[0]}
                 for name, measured in rounds.items()}
        steps["numpy"] = after_pauses(numpy_product(nbytes), pauses, a.reps)
        for name, medians in steps.items():
            results.append({"row": row.id, "step": name, "weight_mib": nbytes / 2**20,
                            "median_ms": medians})
            cells = "  ".join(f"{v:.3f}" for v in medians.values())
            print(f"row {row.id} ({nbytes / 2**20:.1f} MiB of weights) {name:18s} {cells}")
    if a.out:
        a.out.write_text(json.dumps({"threads": a.threads, "pauses_ms": pauses,
                                     "settings": a.settings, "rounds": a.rounds,
                                     "results": results}, indent=1))


if __name__ == "__main__":
    main()
