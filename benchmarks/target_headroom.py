"""What a speed-up target over a peer asks of rnngraph, in each run's own sgemm ceiling.

    python3 benchmarks/target_headroom.py RUN.json [RUN.json ...] [--peer torch] [--target 1.3]

For each (row, threads) of bench_rnn.py results files, and each run: rnngraph's and the peer's
fraction of that run's sgemm ceiling (the `fraction_of_ceiling` bench_rnn.py records), the
fraction rnngraph would need to be `target` times the peer (target x the peer's fraction),
and the measured speed-up. A need above 100 % cannot be met on that run's machine: the
target then asks the peer to be slower than it was, not rnngraph to be faster.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

Cell = tuple[int, int]


def fractions(path: Path, peer: str) -> dict[Cell, tuple[float, float, float]]:
    """{(row, threads): (rnngraph's fraction, the peer's fraction, peer ms / rnngraph ms)}."""
    out = {}
    for r in json.loads(path.read_text())["results"]:
        libs = r["libs"]
        if peer not in libs or "rnngraph" not in libs:
            continue
        ours, theirs = libs["rnngraph"], libs[peer]
        out[(r["row"], int(r["threads"]))] = (ours["fraction_of_ceiling"],
                                             theirs["fraction_of_ceiling"],
                                             theirs["median_ms"] / ours["median_ms"])
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("runs", type=Path, nargs="+")
    p.add_argument("--peer", default="torch")
    p.add_argument("--target", type=float, default=1.3)
    a = p.parse_args(argv)
    runs = [fractions(path, a.peer) for path in a.runs]
    cells = sorted(set().union(*runs), key=lambda c: (c[1], c[0]))
    print(f"per run: rnngraph % / {a.peer} % of the ceiling -> % needed for {a.target}x "
          f"(measured {a.peer} / rnngraph); runs: {', '.join(path.stem for path in a.runs)}")
    print("| row | threads | " + " | ".join(f"run {i + 1}" for i in range(len(runs))) + " |")
    print("|---|---" + "|---" * len(runs) + "|")
    for cell in cells:
        entries = []
        for run in runs:
            if cell not in run:
                entries.append("-")
                continue
            ours, theirs, speedup = run[cell]
            need = a.target * theirs
            mark = " **over 100 %**" if need > 1 else ""
            entries.append(f"{ours:.0%} / {theirs:.0%} -> {need:.0%}{mark} ({speedup:.2f}x)")
        print(f"| {cell[0]} | {cell[1]} | " + " | ".join(entries) + " |")


if __name__ == "__main__":
    main()
