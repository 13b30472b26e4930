"""Where a second thread starts to pay: each "worth a second thread" threshold of
cpp/src/tuning.hpp, measured.

For each site, a workload that reaches it is timed on 2 threads at sizes on both sides of the
default threshold, once with the site always parallel (threshold 0) and once always serial
(threshold 2^62), every other site held at its default and the time loops kept on one
thread where that would confound the site. The crossover is the smallest size from which the
parallel side stays faster. Run on an idle machine:

    python3 benchmarks/thresholds.py            # writes results/thresholds-<date>.{json,md}
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
NEVER = 1 << 62


@dataclass(frozen=True)
class Workload:
    site: str
    cell: str
    train: bool
    T: int
    N: int
    I: int
    H: int
    constant_weights: bool = False
    mask: bool = False
    split: str = "serial"  # the time loops' split while the site is measured
    held: tuple = ()  # other sites held at "never" (their decision would hide this one's)

    def work(self) -> int:
        """The size the site's threshold is compared with (tuning.hpp's units)."""
        G = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}[self.cell]
        step = self.N * G * self.H * self.H
        return {
            "recurrence": self.T * step,
            "step": step,
            "gemm": G * self.H * self.H * self.T * self.N,  # dR = dQᵀ·hm, the largest here
            "projection": self.T * self.N * G * self.H * self.I,
            "pass": self.T * self.N * self.H,
            "pack": G * self.H * self.H,
        }[self.site]


def sweep(site, cell, train, sizes, **fixed):
    return [Workload(site, cell, train, **{**fixed, **size}) for size in sizes]


WORKLOADS = (
    # The time loops cut into row chunks (16 rows: two chunks of 8), T steps.
    sweep("recurrence", "LSTM", False, [{"H": h} for h in (8, 16, 24, 32, 48, 64)],
          T=16, N=16, I=16, split="auto", held=("step",))
    # One step (T = 1) whose product alone may pay for a second thread.
    + sweep("step", "LSTM", False, [{"H": h} for h in (16, 32, 48, 64, 96, 128)],
            T=1, N=16, I=16, split="auto", held=("recurrence",))
    # The weight-gradient products of a training step.
    + sweep("gemm", "singleGateRNN", True, [{"H": h, "I": h} for h in (48, 64, 96, 128, 192, 256)],
            T=8, N=16)
    # The input projection through packed constant weights (T·N ≤ 256 rows).
    + sweep("projection", "LSTM", False, [{"H": h, "I": h} for h in (16, 24, 32, 48, 64, 96)],
            T=4, N=16, constant_weights=True)
    # Sequence passes of a masked reset-before GRU's backward (hp, hm, hm ⊙ r).
    + sweep("pass", "GRU", True, [{"H": h} for h in (64, 128, 256, 512, 1024)],
            T=32, N=16, I=8, mask=True)
    # Packing R into panels (the forward, T·N = 32 rows).
    + sweep("pack", "LSTM", False, [{"H": h} for h in (64, 128, 192, 256, 384)],
            T=2, N=16, I=8)
)


def make_step(w: Workload):
    rng = np.random.default_rng(0)
    G = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}[w.cell]
    normal = lambda *s: (rng.standard_normal(s) / np.sqrt(w.H)).astype(np.float32)
    arrays = {"source": normal(w.T, w.N, w.I), "recurrentWeight": normal(G * w.H, w.H),
              "inputWeight": normal(G * w.H, w.I)}
    if w.mask:
        arrays["mask"] = (rng.random((w.T, w.N, w.H)) > 0.2).astype(np.float32)
    g = rg.Graph()
    constant = ("recurrentWeight", "inputWeight") if w.constant_weights else ()
    t = {k: g.constant(v) if k in constant else g.placeholder(shape=v.shape) for k, v in arrays.items()}
    descriptor = {"singleGateRNN": rg.SingleGateRNNDescriptor, "LSTM": rg.LSTMDescriptor,
                  "GRU": rg.GRUDescriptor}[w.cell](training=w.train)
    outputs = getattr(g, w.cell)(t["source"], **{k: v for k, v in t.items() if k != "source"},
                                 descriptor=descriptor)
    targets = [outputs[0]]
    if w.train:
        targets = list(g.gradients(outputs[0], [t["source"], t["recurrentWeight"]]).values())
    feeds = {t[k]: v for k, v in arrays.items() if k not in constant}
    return lambda: g.run(feeds=feeds, targetTensors=targets)


def measure(w: Workload, budget_s: float) -> dict:
    step = make_step(w)
    settings = {}
    for name, value in (("parallel", 0), ("serial", NEVER)):
        def timed(value=value):
            core._set_parallel_threshold(w.site, value)
            step()
        settings[name] = timed
    core._force_paths(split=w.split)
    for site in w.held:
        core._set_parallel_threshold(site, NEVER)
    try:
        times = measure_interleaved(settings, budget_s=budget_s, settle_s=0.05)
    finally:
        core._force_paths()
        for site in (w.site, *w.held):
            core._set_parallel_threshold(site, -1)
    return {"site": w.site, "work": w.work(), "size": {k: getattr(w, k) for k in "TNIH"},
            "parallel_ms": times["parallel"]["median_ms"], "serial_ms": times["serial"]["median_ms"],
            "parallel_min_ms": times["parallel"]["min_ms"], "serial_min_ms": times["serial"]["min_ms"]}


def crossover(rows: list) -> int | None:
    """The smallest work from which parallel stays faster (None: never within the sweep)."""
    rows = sorted(rows, key=lambda r: r["work"])
    for i, row in enumerate(rows):
        if all(r["parallel_ms"] < r["serial_ms"] for r in rows[i:]):
            return row["work"]
    return None


def report(results: list, defaults: dict) -> str:
    lines = ["| site | work | T N I H | serial ms (min) | parallel ms (min) | serial/parallel |",
             "|---|---|---|---|---|---|"]
    for r in results:
        s = r["size"]
        lines.append(f"| {r['site']} | {r['work']:,} | {s['T']} {s['N']} {s['I']} {s['H']} | "
                     f"{r['serial_ms']:.4g} ({r['serial_min_ms']:.4g}) | "
                     f"{r['parallel_ms']:.4g} ({r['parallel_min_ms']:.4g}) | "
                     f"{r['serial_ms'] / r['parallel_ms']:.2f} |")
    lines += ["", "| site | default threshold | measured crossover |", "|---|---|---|"]
    for site in dict.fromkeys(r["site"] for r in results):
        found = crossover([r for r in results if r["site"] == site])
        lines.append(f"| {site} | {defaults[site]:,} (2^{defaults[site].bit_length() - 1}) | "
                     f"{'none in the sweep' if found is None else f'{found:,}'} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=0.6, help="seconds per measurement")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rg.set_num_threads(args.threads)
    defaults = dict(core._parallel_thresholds())
    results = [measure(w, args.budget) for w in WORKLOADS]
    table = report(results, defaults)
    stamp = machine.now()[:19].replace(":", "")
    out = args.out or RESULTS / f"thresholds-{stamp}.json"
    meta = {"date": machine.now(), "git": machine.git(), "machine": machine.cpu(),
            "load_average_end": machine.load_average(), "threads": args.threads}
    out.write_text(json.dumps({"meta": meta, "defaults": defaults, "results": results}, indent=1))
    out.with_suffix(".md").write_text(table + "\n")
    print(table)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
