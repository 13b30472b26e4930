"""In-process A/B of a run looking only at the recurrent op's unsettled inputs
(ops/layouts.py, ``unsettled``): each row's graph built twice, once with every input looked
at every run as before ('before') and once as now ('after'), the two timed in alternation,
ROUNDS rounds of a median each (rows 1-3 and a one-step H = 8 GRU, whose call is mostly
overhead). Usage: python3 benchmarks/normalise_ab.py THREADS ROUNDS"""

from __future__ import annotations

import sys
import time

import numpy as np
import ours
from rows import BY_ID, Row

import rnngraph as rg
import rnngraph.ops.recurrent as R

rows = [BY_ID[1], BY_ID[2], BY_ID[3], Row(99, "GRU", 1, 1, 8, 8, False, "infer", "tiny GRU")]
threads, rounds = int(sys.argv[1]), int(sys.argv[2])
rg.set_num_threads(threads)


def build(before):
    keep = R.unsettled
    if before:
        R.unsettled = lambda tensors: [k for k, t in tensors.items() if t is not None]
    try:
        return {r.id: ours.make_step(r) for r in rows}
    finally:
        R.unsettled = keep


steps = {"before": build(True), "after": build(False)}


def median_us(f, budget=0.25):
    f()
    ts = []
    end = time.perf_counter() + budget
    while time.perf_counter() < end or len(ts) < 20:
        t = time.perf_counter_ns()
        f()
        ts.append(time.perf_counter_ns() - t)
    return np.median(ts) / 1e3


res = {(r.id, k): [] for r in rows for k in steps}
for i in range(rounds):
    order = ["before", "after"] if i % 2 == 0 else ["after", "before"]
    for r in rows:
        for k in order:
            res[(r.id, k)].append(median_us(steps[k][r.id]))
for r in rows:
    b, a = np.median(res[(r.id, "before")]), np.median(res[(r.id, "after")])
    wins = sum(x < y for x, y in zip(res[(r.id, "after")], res[(r.id, "before")]))
    print(f"row {r.id:2d} {r.cell} T{r.T} N{r.N} I{r.I} H{r.H}: before {b:8.2f} us, after {a:8.2f} us, "
          f"after/before {a/b:.3f}, after faster in {wins}/{rounds} rounds")
