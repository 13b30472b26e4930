"""What a team of threads sharing each step costs: forward time loops of an LSTM on the forced
team path (cpp/src/driver/team_loops.hpp), microseconds per time step, per team size.

    python3 benchmarks/phase_cost.py [--teams 1,2,4,8,16] [--shapes 1x64,1x512,16x256,16x512]
                                     [--steps 400] [--reps 20] [--rate] [--out F]

Each step is one or two phases of one runtime job (N = 1: one, each item its units' product
columns then their element-wise math; else the product's panels, then the element-wise rows),
so a shape whose step has almost no arithmetic (N 1, H 64) shows what the phases themselves
cost, and the others show how that compares with the work a step holds (N 1 H 512: row 4;
N 16 H 256: row 7). The time is the core's "forward_loops" section (RNNGRAPH_PROFILE), the
median over --reps calls.

--rate prints instead the rate at which each thread reads its share of the packed recurrent
weights (4·H·H float32 per step, over the team), GB/s: with N = 1 a step is one pass over
them, so the rate shows where the share is read from (L2, or the L3 beyond it) as H and the
team change.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

os.environ["RNNGRAPH_PROFILE"] = "1"  # read when the core loads
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ours
from rows import Row

import rnngraph
from rnngraph._native import core

SHAPES = "1x64,1x512,16x256,16x512"  # NxH, I = H


def per_step_us(N: int, H: int, steps: int, reps: int) -> float:
    row = Row(0, "LSTM", steps, N, H, H, False, "infer", "phase_cost")
    step = ours.make_step(row)
    step()
    samples = []
    for _ in range(reps):
        core._reset_profile()
        step()
        seconds, _ = core._profile()["forward_loops"]
        samples.append(1e6 * seconds / steps)
    return statistics.median(samples)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--teams", default="1,2,4,8,16")
    p.add_argument("--shapes", default=SHAPES, help="NxH, comma-separated (I = H)")
    p.add_argument("--rate", action="store_true",
                   help="GB/s of packed recurrent weights per thread instead of µs")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    usable = len(os.sched_getaffinity(0))
    shapes = [tuple(int(v) for v in shape.split("x")) for shape in a.shapes.split(",")]
    teams = [t for t in (int(v) for v in a.teams.split(",")) if t <= usable]
    table = {}
    for team in teams:
        rnngraph.set_num_threads(team)
        core._force_paths(split="team" if team > 1 else "serial")
        table[team] = {f"N{N} H{H}": per_step_us(N, H, a.steps, a.reps) for N, H in shapes}
    core._force_paths(split="auto")
    names = list(table[teams[0]])
    print("GB/s of its share of R per thread (median step), forced team path" if a.rate
          else "µs per forward step (median), forced team path")
    print("| team | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for team, cells in table.items():
        values = [16 * H * H / team / (1e3 * cells[f"N{N} H{H}"]) if a.rate
                  else cells[f"N{N} H{H}"] for N, H in shapes]
        print(f"| {team} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
    if a.out:
        a.out.write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
