"""rnngraph's medians in two results files of bench_rnn.py, cell by cell (row, threads).

    python3 benchmarks/compare_runs.py benchmarks/results/OLD.json benchmarks/results/NEW.json

Prints each cell's median and min in both runs and their ratios new / old (< 1: the new run
was faster), then the range of the median ratios and the cells slower by more than 3 %.

--per-ceiling also scales each median ratio by the ratio of the two runs' same-run ceilings
at the cell's thread count (sgemm, dgemm for float64 rows): new / old × new ceiling / old
ceiling, what the ratio would be had the machine been as fast as in the old run. The summary
then uses the scaled ratios. (A shared host's machine can be 10 % slower in one run than in
the next; the kernels that stream weights from L3 need not slow down by as much.)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rows import BY_ID

Cell = tuple[int, str]


def rnngraph_times(path: Path) -> dict[Cell, tuple[float, float]]:
    """{(row, threads): (median ms, min ms)} of rnngraph in one results file."""
    results = json.loads(path.read_text())["results"]
    return {(r["row"], str(r["threads"])): (lib["median_ms"], lib["min_ms"])
            for r in results for name, lib in r["libs"].items() if name.startswith("rnngraph")}


def ceiling_of(path: Path) -> dict[Cell, float]:
    """{(row, threads): GFLOP/s of the run's ceiling for that cell} (sgemm, or dgemm for a
    float64 row), for the cells whose thread count the run's ceiling measured."""
    data = json.loads(path.read_text())
    ceiling = data.get("ceiling") or {}
    out = {}
    for r in data["results"]:
        used = str(r.get("threads_used", r["threads"]))
        if used not in ceiling:
            continue
        gemm = ceiling[used].get("dgemm") if BY_ID[r["row"]].dtype == "float64" else ceiling[used]
        if gemm:
            out[(r["row"], str(r["threads"]))] = gemm["gflops"]
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--per-ceiling", action="store_true",
                   help="scale each ratio by the runs' ceilings (new / old)")
    a = p.parse_args(argv)
    old, new = rnngraph_times(a.old), rnngraph_times(a.new)
    cells = sorted(set(old) & set(new), key=lambda c: (c[1], c[0]))
    old_ceiling, new_ceiling = (ceiling_of(a.old), ceiling_of(a.new)) if a.per_ceiling else ({}, {})
    if a.per_ceiling:
        cells = [c for c in cells if c in old_ceiling and c in new_ceiling]
    scaled = " | at the old ceiling" if a.per_ceiling else ""
    print(f"| row | threads | old median (min) | new median (min) | new / old median | min{scaled} |")
    print("|---|---|---|---|---|---|" + ("---|" if a.per_ceiling else ""))
    ratios = {}
    for cell in cells:
        (om, on), (nm, nn) = old[cell], new[cell]
        ratios[cell] = nm / om
        line = (f"| {cell[0]} | {cell[1]} | {om:.4g} ({on:.4g}) | {nm:.4g} ({nn:.4g}) "
                f"| {nm / om:.2f} | {nn / on:.2f} |")
        if a.per_ceiling:
            ratios[cell] *= new_ceiling[cell] / old_ceiling[cell]
            line += f" {ratios[cell]:.2f} |"
        print(line)
    if ratios:
        slower = [f"row {c[0]} at {c[1]} ({r:.2f})" for c, r in ratios.items() if r > 1.03]
        what = "medians new / old at the old ceiling" if a.per_ceiling else "medians new / old"
        print(f"\n{what} {min(ratios.values()):.2f}-{max(ratios.values()):.2f} "
              f"over {len(ratios)} cells; slower by more than 3 %: {', '.join(slower) or 'none'}")


if __name__ == "__main__":
    main()
