"""Summarizes ab_two_builds.sh's output: per row@threads, the median of each build's rounds.

    python3 benchmarks/ab_summary.py ab.txt
"""

from __future__ import annotations

import json
import statistics
import sys


def summarize(lines: list[str]) -> str:
    records = [json.loads(line) for line in lines if line.startswith("{")]
    cells = list(dict.fromkeys(k for r in records for k in r if "@" in k))
    out = [f"{'cell':>8} {'old median':>10} {'new median':>10}   old rounds | new rounds"]
    for cell in cells:
        runs = {label: [r[cell] for r in records if r["label"] == label and cell in r]
                for label in ("old", "new")}
        out.append(f"{cell:>8} {statistics.median(runs['old']):10.4f} "
                   f"{statistics.median(runs['new']):10.4f}   "
                   + " ".join(f"{x:.3f}" for x in runs["old"]) + " | "
                   + " ".join(f"{x:.3f}" for x in runs["new"]))
    return "\n".join(out)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(summarize(f.readlines()))
