"""The time loops' forced paths side by side: each row's step (ours.make_step) with the path
the thresholds choose and with each forced one (rnngraph._native.core._force_paths),
alternating in one process, --rounds times, so a slow spell of the machine falls on every
path alike. --path split (the default) compares work splits (cpp/src/driver/work_split.hpp);
--path sweep compares which way the steps sweep the weight panels (step_direction), --path
steps how a team runs each forward step (team_loops.hpp, steps_by_units; only where the split
is a team, so its default values force split=team too), --path threshold a parallel site's
threshold (tuning.hpp; e.g. team=262144 for a smaller team, "auto" for the defaults), --path
switch the runtime's switches (pulls=off: no waiter pulls a descheduled worker onto its core;
moves=off: no worker moves off a shared core; runtime/core_moves.hpp). A value
may also name several paths (or sites) at once, as path=value pairs joined by commas.
--under-load K measures beside K busy processes (load.py).

    python3 benchmarks/split_ab.py --rows 10,13 --threads 8 --splits auto team rows --rounds 4
    python3 benchmarks/split_ab.py --path sweep --splits alternating ascending --rows 4,5,6
    python3 benchmarks/split_ab.py --rows 10 --splits auto split=team,steps=units split=team
    python3 benchmarks/split_ab.py --rows 2 --path threshold --splits auto team=65536 team=262144
    python3 benchmarks/split_ab.py --rows 4,6 --threads 2 --path sweep --under-load 1
    python3 benchmarks/split_ab.py --rows 5,6 --threads 2 --path switch --under-load 1

Prints per (row, threads, path) the median of each round's median, in ms, and the rounds.
"""

from __future__ import annotations

import argparse
import statistics

from load import busy
from ours import make_step, move_thresholds
from rows import parse_rows
from timing import measure

import rnngraph as rg
from rnngraph._native import core

DEFAULTS = {"split": ["auto", "team", "rows"], "sweep": ["alternating", "ascending"],
            "steps": ["auto", "split=team,steps=units", "split=team,steps=phases"],
            "threshold": ["auto", "team=65536", "team=262144"],
            "switch": ["auto", "pulls=off"]}


def pairs(value: str) -> dict[str, str]:
    """The path=value pairs of ``value``, joined by commas (ValueError for a pair without "=")."""
    return dict(pair.split("=", 1) for pair in value.split(","))


def forced(path: str, value: str) -> dict[str, str]:
    """What a value of --splits sets: {} for "auto" (every choice to the thresholds),
    {path: value}, or its path=value pairs (ValueError for a pair without "=", or a bare
    value of --path threshold or switch, which names no site or switch)."""
    if value == "auto":
        return {}
    if "=" in value:
        return pairs(value)
    if path in ("threshold", "switch"):
        raise ValueError(value)
    return {path: value}


def apply(path: str, setting: dict[str, str]) -> None:
    """Puts ``setting`` in force, everything it does not name back at its default: the
    thresholds for --path threshold, the runtime's switches for --path switch, the forced
    paths otherwise."""
    if path == "threshold":
        move_thresholds(setting)
    elif path == "switch":
        core._set_worker_pulls(setting.get("pulls", "on") != "off")
        core._set_worker_moves(setting.get("moves", "on") != "off")
    else:
        core._force_paths(**setting)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="10,13")
    p.add_argument("--threads", nargs="+", type=int, default=[8])
    p.add_argument("--path", default="split", choices=sorted(DEFAULTS))
    p.add_argument("--splits", nargs="+",
                   help="the values of --path to compare (default: each path's own, DEFAULTS)")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--budget", type=float, default=1.5, help="seconds per measurement")
    p.add_argument("--under-load", type=int, default=0, metavar="K",
                   help="measure beside K busy processes")
    a = p.parse_args()
    a.splits = a.splits or DEFAULTS[a.path]
    try:
        settings = {value: forced(a.path, value) for value in a.splits}
    except ValueError:
        p.error("--splits: a value is a path's value or path=value pairs joined by commas")
    with busy(a.under_load):
        compare(a, settings)


def compare(a: argparse.Namespace, settings: dict[str, dict[str, str]]) -> None:
    """Each row at each thread count with each setting, alternating, a.rounds times."""
    for n in a.threads:
        rg.set_num_threads(n)
        for row in parse_rows(a.rows):
            step = make_step(row)
            rounds: dict[str, list[float]] = {value: [] for value in a.splits}
            for _ in range(a.rounds):
                for value in a.splits:
                    apply(a.path, settings[value])
                    rounds[value].append(measure(step, budget_s=a.budget)["median_ms"])
            apply(a.path, {})
            for value, ms in rounds.items():
                print(f"row {row.id:2d} @{n:2d} {value:24s} {statistics.median(ms):9.3f} ms   "
                      + " ".join(f"{m:.3f}" for m in ms), flush=True)


if __name__ == "__main__":
    main()
