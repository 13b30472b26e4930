"""rnngraph's medians in two results files of bench_rnn.py, cell by cell (row, threads).

    python3 benchmarks/compare_runs.py benchmarks/results/OLD.json benchmarks/results/NEW.json

Prints each cell's median and min in both runs and their ratios new / old (< 1: the new run
was faster), then the range of the median ratios and the cells slower by more than 3 %.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

Cell = tuple[int, str]


def rnngraph_times(path: Path) -> dict[Cell, tuple[float, float]]:
    """{(row, threads): (median ms, min ms)} of rnngraph in one results file."""
    results = json.loads(path.read_text())["results"]
    return {(r["row"], str(r["threads"])): (lib["median_ms"], lib["min_ms"])
            for r in results for name, lib in r["libs"].items() if name.startswith("rnngraph")}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    a = p.parse_args(argv)
    old, new = rnngraph_times(a.old), rnngraph_times(a.new)
    cells = sorted(set(old) & set(new), key=lambda c: (c[1], c[0]))
    print("| row | threads | old median (min) | new median (min) | new / old median | min |")
    print("|---|---|---|---|---|---|")
    ratios = {}
    for cell in cells:
        (om, on), (nm, nn) = old[cell], new[cell]
        ratios[cell] = nm / om
        print(f"| {cell[0]} | {cell[1]} | {om:.4g} ({on:.4g}) | {nm:.4g} ({nn:.4g}) "
              f"| {nm / om:.2f} | {nn / on:.2f} |")
    if ratios:
        slower = [f"row {c[0]} at {c[1]} ({r:.2f})" for c, r in ratios.items() if r > 1.03]
        print(f"\nmedians new / old {min(ratios.values()):.2f}-{max(ratios.values()):.2f} "
              f"over {len(ratios)} cells; slower by more than 3 %: {', '.join(slower) or 'none'}")


if __name__ == "__main__":
    main()
