"""Which forced path is fastest, shape by shape: the measurements behind the path thresholds
of cpp/src/tuning.hpp (the forward step's product kernel, the panel kernel's tile, the work
split). Each path is forced by name (rnngraph._native.core._force_paths) and timed on the
same graph; the table marks the fastest path per shape and the one the thresholds choose.

    python3 benchmarks/paths.py        # writes results/paths-<date>.{json,md}
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import machine
import numpy as np
from timing import measure_interleaved

import rnngraph as rg
from rnngraph._native import core

RESULTS = Path(__file__).resolve().parent / "results"


@dataclass(frozen=True)
class Sweep:
    name: str  # what it measures
    kind: str  # "product", "tile" or "split"
    paths: tuple
    shapes: tuple  # (T, N, H) of a float32 LSTM forward, I = H
    threads: int
    fixed: dict  # the other paths, forced


SWEEPS = (
    Sweep("product: short sequences, tiny products (kPackWeightsRows, kSmallGemm)", "product",
          ("packed", "dot", "blas", "small"),
          tuple((4, n, h) for h in (8, 16, 32, 64) for n in (1, 4)), 1, {"split": "serial"}),
    Sweep("product: few rows, small H (kPackWeightsHidden, kDotRows, kSmallGemm)", "product",
          ("packed", "dot", "blas", "small"),
          tuple((32, n, 32) for n in (1, 2, 4, 8, 16, 32)), 1, {"split": "serial"}),
    Sweep("product: hidden 128 (kPackWeightsBatch, kPackWeightsHidden)", "product",
          ("packed", "dot", "blas"), tuple((32, n, 128) for n in (1, 2, 4, 8, 16, 32)), 1,
          {"split": "serial"}),
    Sweep("product: hidden 512 (kPackWeightsBatch, kPackWeightsRows)", "product",
          ("packed", "dot", "blas"),
          tuple((t, n, 512) for t, n in ((4, 1), (32, 1), (4, 4), (32, 4), (8, 8), (32, 16))),
          1, {"split": "serial"}),
    Sweep("tile: rows per product (kFewRows, kSomeRowsWide)", "tile", ("few", "some", "many"),
          tuple((16, n, 512) for n in (1, 2, 3, 4, 6, 8, 12, 16)), 1,
          {"product": "packed", "split": "serial"}),
    Sweep("split: 2 threads (kMinChunkRows, kTeamUnitsPerThread, kStreamedWeightBytes)", "split",
          ("serial", "rows", "team"),
          tuple((16, n, h) for h in (32, 128, 512, 1024) for n in (2, 8, 16, 32)), 2, {}),
)


def lstm_forward(T: int, N: int, H: int):
    rng = np.random.default_rng(0)
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, H), dataType=rg.float32)
    R = g.placeholder(shape=(4 * H, H), dataType=rg.float32)
    W = g.placeholder(shape=(4 * H, H), dataType=rg.float32)
    (h,) = g.LSTM(x, recurrentWeight=R, inputWeight=W)
    feeds = {t: (rng.standard_normal(t.shape) / np.sqrt(H)).astype(np.float32) for t in (x, R, W)}
    return lambda: g.run(feeds=feeds, targetTensors=[h])


def measure_sweep(sweep: Sweep, budget_s: float) -> list:
    rows = []
    rg.set_num_threads(sweep.threads)
    for T, N, H in sweep.shapes:
        step = lstm_forward(T, N, H)
        steps = {}
        for path in ("auto", *sweep.paths):
            if path == "small" and N * 4 * H * H > 1 << 20:
                continue  # the in-order kernel: only for tiny products

            def forced(path=path, step=step):
                core._force_paths(**{**sweep.fixed, sweep.kind: path})
                step()
            steps[path] = forced
        try:
            times = measure_interleaved(steps, budget_s=budget_s, settle_s=0.05)
        finally:
            core._force_paths()
        ms = {path: t["median_ms"] for path, t in times.items()}
        best = min((p for p in ms if p != "auto"), key=ms.get)
        auto = min((p for p in ms if p != "auto"), key=lambda p: abs(ms[p] - ms["auto"]))
        rows.append({"sweep": sweep.name, "T": T, "N": N, "H": H, "threads": sweep.threads,
                     "median_ms": ms, "fastest": best, "auto_like": auto})
    return rows


def report(rows: list) -> str:
    lines = []
    for name in dict.fromkeys(r["sweep"] for r in rows):
        sub = [r for r in rows if r["sweep"] == name]
        paths = [p for p in sub[0]["median_ms"] if p != "auto"]
        lines += [f"### {name}, {sub[0]['threads']} thread(s), ms (median)", "",
                  "| T N H | " + " | ".join(paths) + " | auto | fastest |",
                  "|---" * (len(paths) + 3) + "|"]
        for r in sub:
            cells = [f"{r['median_ms'][p]:.4g}" if p in r["median_ms"] else "–" for p in paths]
            lines.append(f"| {r['T']} {r['N']} {r['H']} | " + " | ".join(cells)
                         + f" | {r['median_ms']['auto']:.4g} | {r['fastest']} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=0.5, help="seconds per shape")
    parser.add_argument("--sweeps", default="", help="only the sweeps whose name has this text")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    chosen = [sweep for sweep in SWEEPS if args.sweeps in sweep.name]
    rows = [r for sweep in chosen for r in measure_sweep(sweep, args.budget)]
    stamp = machine.now()[:19].replace(":", "")
    out = args.out or RESULTS / f"paths-{stamp}.json"
    meta = {"date": machine.now(), "git": machine.git(), "machine": machine.cpu(),
            "load_average_end": machine.load_average()}
    out.write_text(json.dumps({"meta": meta, "results": rows}, indent=1))
    out.with_suffix(".md").write_text(report(rows) + "\n")
    print(report(rows))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
