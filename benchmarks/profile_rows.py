"""Where each row's time goes: rnngraph's own sections (cpp/src/profile.hpp) per call.

    python3 benchmarks/profile_rows.py [--rows 7,8,10,13] [--threads 16] [--reps 10] [--out F]
                                       [--threshold SITE=VALUE ...] [--per-call]

Runs each row's step (ours.make_step) --reps times after a warm-up with RNNGRAPH_PROFILE set,
and prints per call: the wall time, each section's time (projection, packing, forward loops,
backward prepare, backward loops, weight gradients; summed over the calls the step makes)
and what is left outside them (graph and Python overhead, outputs). --threshold moves one of
the parallel sites of cpp/src/tuning.hpp (e.g. team=524288) for the whole run. --per-call
prints every call on its own instead, with the context switches of the process's threads
during it (voluntary: a thread slept; involuntary: the OS took its core), to tell a slow
section from a slow machine.
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

import rnngraph
from rnngraph._native import core


def profile_row(row_id: int, reps: int) -> dict:
    step = ours.make_step(BY_ID[row_id])
    step()
    step()
    core._reset_profile()
    t0 = time.perf_counter()
    for _ in range(reps):
        step()
    wall_ms = 1e3 * (time.perf_counter() - t0) / reps
    sections = {name: 1e3 * seconds / reps for name, (seconds, _) in core._profile().items()}
    return {"row": row_id, "wall_ms": wall_ms, "sections_ms": sections,
            "outside_ms": wall_ms - sum(sections.values())}


TASKS = Path("/proc/self/task")  # Linux: one status file per thread of this process


def context_switches() -> dict[str, tuple[int, int]]:
    """{thread id: (voluntary, involuntary) context switches so far}, per thread (Linux)."""
    counts = {}
    for status in TASKS.glob("*/status"):
        try:
            lines = status.read_text().splitlines()
        except OSError:  # a thread that ended meanwhile
            continue
        fields = dict(line.split(":", 1) for line in lines if ":" in line)
        counts[status.parent.name] = (int(fields["voluntary_ctxt_switches"]),
                                      int(fields["nonvoluntary_ctxt_switches"]))
    return counts


def switches_between(before: dict[str, tuple[int, int]],
                     after: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """The switches of the threads present at both reads (one that started or ended between
    them would count its whole life)."""
    both = before.keys() & after.keys()
    return (sum(after[t][0] - before[t][0] for t in both),
            sum(after[t][1] - before[t][1] for t in both))


def print_per_call(row_id: int, threads: int, reps: int, thresholds: list[str]) -> None:
    """Each of ``reps`` calls: wall ms, each section's ms, what is left outside them, and the
    context switches of the process's threads during the call (n/a where /proc has none)."""
    step = ours.make_step(BY_ID[row_id])
    step()
    step()
    names = list(core._profile())
    print(f"row {row_id}, {threads} threads" + "".join(f", {t}" for t in thresholds)
          + ", ms per call")
    print("| call | wall | " + " | ".join(names) + " | outside | voluntary | involuntary |")
    print("|---" * (len(names) + 5) + "|")
    counted = TASKS.is_dir()
    for i in range(reps):
        core._reset_profile()
        before = context_switches() if counted else {}
        t0 = time.perf_counter()
        step()
        wall_ms = 1e3 * (time.perf_counter() - t0)
        switches = switches_between(before, context_switches()) if counted else ("n/a", "n/a")
        sections = {n: 1e3 * seconds for n, (seconds, _) in core._profile().items()}
        cells = " | ".join(f"{sections[n]:.2f}" for n in names)
        outside = wall_ms - sum(sections.values())
        print(f"| {i} | {wall_ms:.2f} | {cells} | {outside:.2f} | {switches[0]} | {switches[1]} |")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="7,8,10,13")
    p.add_argument("--threads", type=int, default=rnngraph.get_num_threads())
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--out", type=Path)
    p.add_argument("--threshold", action="append", default=[], metavar="SITE=VALUE")
    p.add_argument("--per-call", action="store_true",
                   help="print every call on its own, with the context switches during it")
    a = p.parse_args(argv)
    rnngraph.set_num_threads(a.threads)
    for setting in a.threshold:
        site, _, value = setting.partition("=")
        core._set_parallel_threshold(site, int(value))
    if a.per_call:
        if a.out:
            p.error("--out writes the table of means; --per-call prints each call instead")
        for r in a.rows.split(","):
            print_per_call(int(r), a.threads, a.reps, a.threshold)
        return
    results = [profile_row(int(r), a.reps) for r in a.rows.split(",")]
    names = list(results[0]["sections_ms"])
    print(f"ms per call, {a.threads} threads" + "".join(f", {t}" for t in a.threshold))
    print("| row | wall | " + " | ".join(names) + " | outside |")
    print("|---" * (len(names) + 3) + "|")
    for r in results:
        cells = " | ".join(f"{r['sections_ms'][n]:.2f}" for n in names)
        print(f"| {r['row']} | {r['wall_ms']:.2f} | {cells} | {r['outside_ms']:.2f} |")
    if a.out:
        a.out.write_text(json.dumps({"threads": a.threads, "thresholds": a.threshold,
                                     "results": results}, indent=1))


if __name__ == "__main__":
    main()
