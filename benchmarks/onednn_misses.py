"""Each row where rnngraph misses its target against oneDNN (docs/BENCHMARKS.md: train rows
at least 1.10× oneDNN, infer rows at least 1.0×), with what limits it: the row's ratio in a
committed full run, the fraction of that run's sgemm ceiling rnngraph and oneDNN reach and
the fraction a 1.10× (1.0×) lead would need, and where rnngraph's time goes (the sections of
cpp/src/profile.hpp, each product section with its GFLOP/s).

    python3 benchmarks/onednn_misses.py --run benchmarks/results/run-<stamp>.json
                                        [--threads 1 2] [--reps 10]

Writes benchmarks/results/onednn-misses-<stamp>.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import machine
import profile_rows  # (sets RNNGRAPH_PROFILE before rnngraph loads)
from rows import BY_ID, GATES

import rnngraph

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = {"train": 1.10, "infer": 1.0}
BUDGET_MS = 500.0  # profiled time per row at least: a small row's median of 10 calls is noise
SECTIONS = ("projection", "packing", "forward_loops", "backward_prepare", "backward_loops",
            "weight_gradients")


def section_flop(row_id: int) -> dict[str, float]:
    """The products each section computes (2 flop per multiply-add): the input projection
    x·Wᵀ, the recurrent products h·Rᵀ, their transposes in the backward loops, and the weight
    and input gradients dW, dR, dx (SPEC.md sections 2-4, 6)."""
    row = BY_ID[row_id]
    D = 2 if row.bidirectional else 1
    rows_of_x, gate_rows = row.T * row.N, D * GATES[row.cell] * row.H
    flop = {"projection": 2.0 * rows_of_x * row.I * gate_rows,
            "forward_loops": 2.0 * rows_of_x * row.H * gate_rows}
    if row.mode == "train":
        flop["backward_loops"] = 2.0 * rows_of_x * row.H * gate_rows
        flop["weight_gradients"] = 2.0 * rows_of_x * gate_rows * (row.H + 2 * row.I)
    return flop


def misses(run: dict) -> list[dict]:
    """The run's (row, threads) cells below the target, with both libraries' fractions of
    the ceiling and the fraction the target needs."""
    found = []
    for cell in run["results"]:
        ours, theirs = cell["libs"].get("rnngraph"), cell["libs"].get("onednn")
        ratio = cell.get("speedup", {}).get("onednn")
        if ours is None or theirs is None or ratio is None:
            continue
        target = TARGET[cell["mode"]]
        if ratio >= target:
            continue
        fraction = ours["fraction_of_ceiling"]
        found.append({"row": cell["row"], "threads": int(cell["threads"]),
                      "label": f"{cell['label']} {cell['shape']}", "mode": cell["mode"],
                      "ratio": ratio, "target": target, "ours_ms": ours["median_ms"],
                      "onednn_ms": theirs["median_ms"], "ours_fraction": fraction,
                      "onednn_fraction": theirs["fraction_of_ceiling"],
                      "needed_fraction": fraction * target / ratio})
    return found


def profile(row_id: int, threads: int, reps: int) -> dict:
    """profile_rows' sections for the row (over ``reps`` calls, or as many as fill
    BUDGET_MS), each product section with its GFLOP/s."""
    rnngraph.set_num_threads(threads)
    estimate = profile_rows.profile_row(row_id, 3)["wall_ms"]  # (also warms the new team)
    result = profile_rows.profile_row(row_id, max(reps, int(BUDGET_MS / estimate)))
    flop = section_flop(row_id)
    result["gflops"] = {name: flop[name] / (ms * 1e6)
                        for name, ms in result["sections_ms"].items() if name in flop and ms}
    return result


def table(found: list[dict], ceiling: dict) -> str:
    header = ("| row | thr | vs oneDNN (target) | rnngraph / oneDNN ms | of ceiling: rnngraph, "
              "oneDNN, needed | rnngraph's time: section ms (GFLOP/s) |")
    lines = [header, "|---|---|---|---|---|---|"]
    for m in found:
        p = m["profile"]
        parts = [f"{name.replace('_', ' ')} {p['sections_ms'][name]:.3g}"
                 + (f" ({p['gflops'][name]:.0f})" if name in p["gflops"] else "")
                 for name in SECTIONS if p["sections_ms"].get(name)]
        parts.append(f"outside {p['outside_ms']:.3g}")
        lines.append(
            f"| {m['row']} {m['label']} {m['mode']} | {m['threads']} | {m['ratio']:.2f}× "
            f"({m['target']:.2f}) | {m['ours_ms']:.3g} / {m['onednn_ms']:.3g} | "
            f"{m['ours_fraction']:.0%}, {m['onednn_fraction']:.0%}, "
            f"**{m['needed_fraction']:.0%}** | {'; '.join(parts)} |")
    gflops = ", ".join(f"{t} thr {c['gflops']:.0f}" for t, c in sorted(ceiling.items()))
    lines.append("")
    lines.append(f"Ceiling: the run's 2048³ sgemm, GFLOP/s: {gflops}. Sections as wall ms per "
                 "call (this process, profiled); GFLOP/s of the products each section "
                 "computes.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--reps", type=int, default=10)
    a = p.parse_args(argv)
    run = json.loads(a.run.read_text())
    found = [m for m in misses(run) if m["threads"] in a.threads]
    for m in found:
        m["profile"] = profile(m["row"], m["threads"], a.reps)
    text = (f"Rows below their target against oneDNN in `{a.run.name}` "
            f"(commit {run['meta']['git']['commit'][:7]}), profiled at commit {(machine.git()['commit'] or '?')[:7]}:\n\n"
            + table(found, run["ceiling"]))
    print(text)
    stamp = time.strftime("%Y-%m-%dT%H%M%S")
    (RESULTS / f"onednn-misses-{stamp}.md").write_text(text + "\n")
    (RESULTS / f"onednn-misses-{stamp}.json").write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
