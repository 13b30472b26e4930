"""One process of an A/B between two builds: rows in bench_rnn.py's sweep order at the given
thread counts; prints one JSON line of medians in ms ({"label", "file", "row@threads": ms}).

    python3 benchmarks/ab_sweep.py LABEL 8,16 1-6 [PATH=VALUE,...]

ab_two_builds.sh runs it alternately against two builds (a change and the revision before).
With PATH=VALUE pairs (e.g. tile=some,sweep=ascending) the process first forces those paths
(rnngraph._native.core._force_paths): one build, its paths compared in alternating processes.
"""

from __future__ import annotations

import json
import sys

from ours import make_step
from rows import parse_rows
from split_ab import pairs
from timing import measure

import rnngraph as rg
from rnngraph._native import core


def main(label: str, threads: str, rows: str, paths: str = "") -> None:
    if paths:
        core._force_paths(**pairs(paths))
    out = {"label": label, "file": rg.__file__}
    for count in (int(t) for t in threads.split(",")):
        rg.set_num_threads(count)
        for row in parse_rows(rows):
            budget = 1.0 if row.mode == "infer" else 2.0
            out[f"{row.id}@{count}"] = measure(make_step(row), budget_s=budget)["median_ms"]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:5])
