"""Timing one benchmark step: warm-up, then repetitions sized to a time budget."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from settle import summary

# Repetitions of a step of 0.25 s or more: BENCHMARKS.md allows as few as 3, but a median of
# 3 turns on a single slow repetition of a shared machine.
LARGE_STEP_REPS = 5


def measure(step: Callable, budget_s: float = 2.0, min_reps: int = 10, max_reps: int = 1000,
            settle_s: float = 0.2, settle: Callable[[float], dict] | None = None) -> dict:
    """Median and min of ``step()`` with time.perf_counter, in milliseconds.

    ``settle_s`` of sleep first lets the previous library's worker threads stop spinning (on
    a 2-core machine a spinning OpenBLAS/OpenMP/ORT pool steals a core from the next peer).
    Two warm-up calls (a library's memory pools and caches settle only by the second call),
    then repetitions filling ``budget_s``: at least ``min_reps`` for steps under 0.25 s, at
    least ``LARGE_STEP_REPS`` for larger ones. ``settle`` (settle.settle, given the window)
    replaces the sleep with a settle check; its findings join the result (settle.summary).
    """
    return measure_interleaved({"step": step}, budget_s=budget_s, rounds=1, min_reps=min_reps,
                               max_reps=max_reps, settle_s=settle_s, settle=settle)["step"]


def measure_interleaved(steps: dict, budget_s: float = 2.0, rounds: int = 4, min_reps: int = 10,
                        max_reps: int = 1000, settle_s: float = 0.2,
                        settle: Callable[[float], dict] | None = None) -> dict:
    """``measure`` for several libraries' steps of one row, taken in turns: each is warmed up,
    then ``rounds`` rounds give every step its share of repetitions in turn (the order rotating
    from round to round), so a slow spell of a shared machine falls on all of them alike.
    Returns {name: {"median_ms", "min_ms", "mean_ms", "p90_ms", "reps"}} (``spread``) over all
    of a step's repetitions (and the settle fields where ``settle`` is given)."""
    checks: dict = {name: [] for name in steps}

    def pause(name: str) -> None:
        if settle is None:
            time.sleep(settle_s)
        else:
            checks[name].append(settle(settle_s))

    planned = {}
    for name, step in steps.items():
        pause(name)
        step()
        t0 = time.perf_counter()
        step()
        first = time.perf_counter() - t0
        floor = min_reps if first < 0.25 else LARGE_STEP_REPS
        planned[name] = max(floor, min(max_reps, int(budget_s / max(first, 1e-9))))
    times = {name: [] for name in steps}
    names = list(steps)
    rounds = max(1, min(rounds, *planned.values()))  # a large row: a repetition per round
    for r in range(rounds):
        for name in rotated(names, r):
            share = -(-planned[name] // rounds)  # ceil
            pause(name)
            for _ in range(share):
                t0 = time.perf_counter()
                steps[name]()
                times[name].append(time.perf_counter() - t0)
    return {name: {**spread(t), **(summary(checks[name]) if checks[name] else {})}
            for name, t in times.items()}


def rotated(names: list, r: int) -> list:
    """``names`` as round ``r`` takes them: starting from the (r mod len)-th, so that over
    the rounds each goes first in turn and a slow spell does not fall on one of them."""
    return names[r % len(names):] + names[:r % len(names)]


def spread(seconds: list[float]) -> dict:
    """Median, min, mean and 90th percentile of repetition times in seconds, in milliseconds.

    The median is what the tables compare; the mean and p90 show what it hides under load: a
    pool that waits for a descheduled worker runs most calls at full speed and a few many
    times slower, one that lets the caller finish the late worker's items runs more calls
    somewhat slower (docs/runtime.md, "Medians and what they hide", has the figures)."""
    ordered = sorted(seconds)
    p90 = ordered[round(0.9 * (len(ordered) - 1))]
    return {"median_ms": 1e3 * statistics.median(ordered), "min_ms": 1e3 * ordered[0],
            "mean_ms": 1e3 * statistics.fmean(ordered), "p90_ms": 1e3 * p90,
            "reps": len(ordered)}
