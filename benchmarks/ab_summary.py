"""Summarizes ab_sweep.py's JSON lines (ab_two_builds.sh, builds_under_load.py): per
row@threads, the median of each build's rounds, then every round.

    python3 benchmarks/ab_summary.py ab.txt
"""

from __future__ import annotations

import json
import statistics
import sys


def summarize_records(records: list[dict]) -> str:
    """One line per cell: each label's median of rounds, then its rounds (labels in order of
    appearance, e.g. old and new)."""
    labels = list(dict.fromkeys(r["label"] for r in records))
    cells = list(dict.fromkeys(k for r in records for k in r if "@" in k))
    out = [f"{'cell':>8} " + " ".join(f"{label + ' median':>10}" for label in labels) + "   "
           + " | ".join(f"{label} rounds" for label in labels)]
    for cell in cells:
        runs = {label: [r[cell] for r in records if r["label"] == label and cell in r]
                for label in labels}
        out.append(f"{cell:>8} "
                   + " ".join(f"{statistics.median(runs[label]):10.4f}" for label in labels)
                   + "   "
                   + " | ".join(" ".join(f"{x:.3f}" for x in runs[label]) for label in labels))
    return "\n".join(out)


def summarize(lines: list[str]) -> str:
    return summarize_records([json.loads(line) for line in lines if line.startswith("{")])


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(summarize(f.readlines()))
