"""Where each row's time goes: rnngraph's own sections (cpp/src/profile.hpp) per call.

    python3 benchmarks/profile_rows.py [--rows 7,8,10,13] [--threads 16] [--reps 10] [--out F]
                                       [--threshold SITE=VALUE ...] [--force PATH=VALUE ...]
                                       [--per-call]

Runs each row's step (ours.make_step) --reps times after a warm-up with RNNGRAPH_PROFILE set,
and prints per call: the wall time, each section's time (projection, packing, forward loops,
backward prepare, backward loops, weight gradients; summed over the calls the step makes)
and what is left outside them (graph and Python overhead, outputs). --threshold moves one of
the parallel sites of cpp/src/tuning.hpp (e.g. team=524288) for the whole run; --force forces
one of the paths a call would otherwise choose (rnngraph._native.core._force_paths, e.g.
split=team or steps=units) for the whole run. --per-call prints every call on its own
instead, with the context switches of the process's threads during it (voluntary: a thread
slept; involuntary: the OS took its core), to tell a slow section from a slow machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ["RNNGRAPH_PROFILE"] = "1"  # read when the core loads
sys.path.insert(0, str(Path(__file__).resolve().parent))

import ours
from rows import BY_ID
from settle import TASKS, thread_switches

import rnngraph
from rnngraph._native import core


def warm_step(row_id: int):
    """Row ``row_id``'s step (ours.make_step), called twice (packing, kept memory)."""
    step = ours.make_step(BY_ID[row_id])
    step()
    step()
    return step


def timed(step, calls: int = 1) -> tuple[float, dict[str, float]]:
    """ms per call over ``calls`` calls of ``step``: the wall time, and each section's."""
    core._reset_profile()
    t0 = time.perf_counter()
    for _ in range(calls):
        step()
    wall_ms = 1e3 * (time.perf_counter() - t0) / calls
    return wall_ms, {name: 1e3 * seconds / calls for name, (seconds, _) in core._profile().items()}


def print_head(title: str, columns: list[str]) -> None:
    """A Markdown table's title line, header and separator."""
    print(title)
    print("| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")


def profile_row(row_id: int, reps: int) -> dict:
    wall_ms, sections = timed(warm_step(row_id), reps)
    return {"row": row_id, "wall_ms": wall_ms, "sections_ms": sections,
            "outside_ms": wall_ms - sum(sections.values())}


def switches_between(before: dict[int, tuple[int, int]],
                     after: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """The context switches of the threads present at both reads (settle.thread_switches; a
    thread that started or ended between them would count its whole life)."""
    both = before.keys() & after.keys()
    return (sum(after[t][0] - before[t][0] for t in both),
            sum(after[t][1] - before[t][1] for t in both))


def print_per_call(row_id: int, threads: int, reps: int, thresholds: list[str]) -> None:
    """Each of ``reps`` calls: wall ms, each section's ms, what is left outside them, and the
    context switches of the process's threads during the call (n/a where /proc has none)."""
    step = warm_step(row_id)
    names = list(core._profile())
    print_head(f"row {row_id}, {threads} threads" + "".join(f", {t}" for t in thresholds)
               + ", ms per call",
               ["call", "wall", *names, "outside", "voluntary", "involuntary"])
    counted = TASKS.is_dir()
    for i in range(reps):
        before = thread_switches() if counted else {}
        wall_ms, sections = timed(step)
        switches = switches_between(before, thread_switches()) if counted else ("n/a", "n/a")
        cells = " | ".join(f"{sections[n]:.2f}" for n in names)
        outside = wall_ms - sum(sections.values())
        print(f"| {i} | {wall_ms:.2f} | {cells} | {outside:.2f} | {switches[0]} | {switches[1]} |")


def pairs(settings: list[str]) -> dict[str, str]:
    """{NAME: VALUE} of --threshold's or --force's NAME=VALUE settings (ValueError for one
    without "=")."""
    return dict(setting.split("=", 1) for setting in settings)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="7,8,10,13")
    p.add_argument("--threads", type=int, default=rnngraph.get_num_threads())
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--out", type=Path)
    p.add_argument("--threshold", action="append", default=[], metavar="SITE=VALUE")
    p.add_argument("--force", action="append", default=[], metavar="PATH=VALUE")
    p.add_argument("--per-call", action="store_true",
                   help="print every call on its own, with the context switches during it")
    a = p.parse_args(argv)
    rnngraph.set_num_threads(a.threads)
    try:
        ours.move_thresholds(pairs(a.threshold))
    except ValueError as error:
        p.error(f"--threshold: SITE=VALUE, a site of cpp/src/tuning.hpp and an integer: {error}")
    try:
        core._force_paths(**pairs(a.force))
    except (TypeError, ValueError) as error:
        p.error(f"--force: PATH=VALUE, a path of core._force_paths and one of its values: {error}")
    settings = a.threshold + a.force
    if a.per_call:
        if a.out:
            p.error("--out writes the table of means; --per-call prints each call instead")
        for r in a.rows.split(","):
            print_per_call(int(r), a.threads, a.reps, settings)
        return
    results = [profile_row(int(r), a.reps) for r in a.rows.split(",")]
    names = list(results[0]["sections_ms"])
    print_head(f"ms per call, {a.threads} threads" + "".join(f", {t}" for t in settings),
               ["row", "wall", *names, "outside"])
    for r in results:
        cells = " | ".join(f"{r['sections_ms'][n]:.2f}" for n in names)
        print(f"| {r['row']} | {r['wall_ms']:.2f} | {cells} | {r['outside_ms']:.2f} |")
    if a.out:
        a.out.write_text(json.dumps({"threads": a.threads, "thresholds": a.threshold,
                                     "forced": a.force, "results": results}, indent=1))


if __name__ == "__main__":
    main()
