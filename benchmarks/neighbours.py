"""rnngraph's next call right after other thread pools in the same process ran on every core
(issue: living beside PyTorch's OpenMP pool, ONNX Runtime's pool and NumPy's OpenBLAS).

    python3 benchmarks/neighbours.py [--rows 2,4,5,8] [--threads N] [--reps 200]
                                     [--cases "all, calm" ...] [--out F.json]

For each row, one fresh process per case measures rnngraph's call (ours.make_step) on
--threads threads, with the median over --reps calls. Before every timed call, the case's
"neighbours" run:

  quiet          nothing: calls back to back in a process where no other library ever ran;
  paused         a sleep as long as the neighbours of "all" take: no other pool, but the same
                 pause since rnngraph's last call (its workers asleep, caches and cores cold);
  torch          a PyTorch matmul (torch.set_num_threads(N)): its OpenMP threads then spin;
  ort            an ONNX Runtime LSTM session run (intra_op_num_threads=N, spinning allowed);
  numpy          a NumPy matmul (its own OpenBLAS, N threads: its workers spin about 0.1 s);
  all            the three, back to back;
  all, calm      the three, each told not to spin once it runs out of work: PyTorch's libgomp
                 with OMP_WAIT_POLICY=PASSIVE, ONNX Runtime's session with
                 session.intra_op.allow_spinning=0, NumPy's OpenBLAS with
                 OPENBLAS_THREAD_TIMEOUT=4 (the shortest spin it takes);
  all, shared    the three, in a process that imported rnngraph.torch, whose default runs
                 rnngraph's parallel sections on torch's OpenMP threads (docs/pytorch.md);
  ... no fall-back  the same with the shared pool's fall-back to rnngraph's own workers off
                 (tuning::kHostPoolStallUs): what a stalling shared pool costs without it;
  paused, shared (and its "no fall-back" twin): the pause, with torch's pool shared;
  paused, calm   a sleep as long as the neighbours of "all, calm" take (calm ones finish
                 sooner): the pause that case is compared with.

--cases picks cases (quiet, paused and all always run: the ratios need them; "all, calm"
and "paused, calm" run together).
The shared cases also give the pool's stalled regions and the rests they started.
Reports each median and its ratio to "quiet" (the issue's target: "all" at most 1.2), and to
"paused" ("all, calm": to "paused, calm"), which separates what the other pools' threads
cost from what the pause alone does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from script_child import run_json

PAUSE, ALL = ("pause",), ("torch", "ort", "numpy")
class Case(NamedTuple):
    neighbours: tuple[str, ...]  # run before each call (PAUSE: a sleep)
    shared: bool = False  # torch's OpenMP pool shared (rnngraph.torch imported)
    fall_back: bool = True  # the shared pool's fall-back to rnngraph's own workers
    calm: bool = False  # the neighbours told to block once idle (CALM_ENV)
    # A pause case: the case whose neighbours' time it sleeps, and whose ratio it is the
    # denominator of ("paused" for every case without a pause of its own).
    pause_of: str = "all"

    @property
    def pause(self) -> bool:
        return self.neighbours == PAUSE

    def description(self) -> list[str]:
        """What runs before each call, and how, for the results file."""
        return [
            *self.neighbours,
            *(["torch's pool shared"] if self.shared else []),
            *([] if self.fall_back else ["no fall-back"]),
            *([f"told not to spin: {CALM_ENV}, ONNX Runtime allow_spinning=0"] if self.calm
              else []),
        ]


CASES = {
    "quiet": Case(()),
    "paused": Case(PAUSE),
    "torch": Case(("torch",)),
    "ort": Case(("ort",)),
    "numpy": Case(("numpy",)),
    "all": Case(ALL),
    "all, calm": Case(ALL, calm=True),
    "all, shared": Case(ALL, shared=True),
    "all, shared, no fall-back": Case(ALL, shared=True, fall_back=False),
    "paused, shared": Case(PAUSE, shared=True),
    "paused, shared, no fall-back": Case(PAUSE, shared=True, fall_back=False),
    "paused, calm": Case(PAUSE, pause_of="all, calm"),
}
ALWAYS = ("quiet", "paused", "all")


def own_pause(case: str) -> str:
    """The pause case ``case`` is compared with: one as long as its own neighbours, if there
    is one, else "paused"."""
    return next((name for name, c in CASES.items()
                 if c.pause and not c.shared and c.pause_of == case), "paused")


# The environment of a calm case's process: libgomp and OpenBLAS read it when they load.
CALM_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}


def other_pools(names, threads: int, pause_s: float, calm: bool = False):
    """A call that runs the named neighbours back to back, each on ``threads`` threads:
    torch (a matmul), ort (an ONNX Runtime LSTM session, not spinning when ``calm``), numpy
    (a matmul), pause (a sleep of ``pause_s``)."""
    calls = []
    if "torch" in names:
        import torch

        torch.set_num_threads(threads)
        a = torch.randn(512, 512)
        calls.append(lambda: torch.mm(a, a))
    if "ort" in names:
        import peers
        from rows import BY_ID

        calls.append(peers.ort_step(BY_ID[4], threads, spinning=not calm))  # an LSTM session
    if "numpy" in names:
        import numpy as np
        import threadpoolctl

        threadpoolctl.threadpool_limits(threads, user_api="blas")
        m = np.random.default_rng(0).standard_normal((512, 512))
        calls.append(lambda: m @ m)
    if "pause" in names:
        calls.append(lambda: time.sleep(pause_s))

    def run() -> None:
        for call in calls:
            call()

    return run


def measure(case: str, row_id: int, threads: int, reps: int, pause_s: float) -> dict:
    """Median ms of rnngraph's call in this process, and how long the neighbours took."""
    c = CASES[case]
    import ours
    from rows import BY_ID

    import rnngraph
    from rnngraph._native import core

    if c.shared:
        import rnngraph.torch  # adopts torch's OpenMP pool
    core._set_host_pool_fall_back(c.fall_back)
    rnngraph.set_num_threads(threads)
    step = ours.make_step(BY_ID[row_id])
    neighbours = other_pools(c.neighbours, threads, pause_s, c.calm)
    for _ in range(3):
        neighbours()
        step()
    times, gaps = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        neighbours()
        t1 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t1)
        gaps.append(t1 - t0)
    stalled, rests = core._host_pool_stalls()
    return {
        "ms": 1e3 * statistics.median(times),
        "neighbours_ms": 1e3 * statistics.median(gaps),
        "stalled_regions": stalled,
        "rests": rests,
    }


def run_case(case: str, row: int, a, pause_s: float = 0.0) -> dict:
    # Only a calm case's neighbours are told not to spin: the others run without those
    # variables, whatever the caller's shell set.
    env = {k: v for k, v in os.environ.items() if k not in CALM_ENV}
    if CASES[case].calm:
        env.update(CALM_ENV)
    return run_json(
        __file__,
        [
            "--child",
            case,
            str(row),
            "--threads",
            str(a.threads),
            "--reps",
            str(a.reps),
            "--pause",
            str(pause_s),
        ],
        env=env,
    )


def write(path: Path | None, results: list, chosen: list[str]) -> None:
    if path:
        cases = {name: case.description() for name, case in CASES.items() if name in chosen}
        path.write_text(
            json.dumps({"command": sys.argv, "cases": cases, "results": results}, indent=1)
        )


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="2,4,5,8")
    p.add_argument("--threads", type=int, default=None, help="default: rnngraph's default")
    p.add_argument("--reps", type=int, default=200)
    p.add_argument(
        "--pause",
        type=float,
        default=None,
        help="seconds of every pause case (default: what the case it is matched with took, "
        "measured: 'all', or 'all, calm' for 'paused, calm')",
    )
    p.add_argument("--cases", nargs="+", choices=list(CASES), default=list(CASES))
    p.add_argument("--out", type=Path)
    p.add_argument("--child", nargs=2, metavar=("CASE", "ROW"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.threads is None:
        import rnngraph

        a.threads = rnngraph.get_num_threads()
    if a.child:
        print(json.dumps(measure(a.child[0], int(a.child[1]), a.threads, a.reps, a.pause or 0)))
        return
    # each case with its own pause, and each pause case with the case it sleeps as long as
    wanted = set(a.cases) | set(ALWAYS) | {own_pause(c) for c in a.cases}
    wanted |= {CASES[c].pause_of for c in a.cases if CASES[c].pause}
    chosen = [c for c in CASES if c in wanted]
    # the pause cases last: each sleeps as long as its pause_of case's neighbours took
    pauses = [c for c in chosen if CASES[c].pause]
    cases = [c for c in chosen if c not in pauses] + pauses
    print(f"{a.threads} threads, ms (ratio to quiet / to paused; stalled regions, rests)")
    print("| row | " + " | ".join(chosen) + " |")
    print("|---" * (len(chosen) + 1) + "|")
    results = []
    for row in [int(r) for r in a.rows.split(",")]:
        ms = {}
        for case in cases:
            pause_s = 0.0
            if CASES[case].pause:
                pause_of = CASES[case].pause_of
                pause_s = ms[pause_of]["neighbours_ms"] / 1e3 if a.pause is None else a.pause
            ms[case] = run_case(case, row, a, pause_s)
        quiet = ms["quiet"]["ms"]
        for case in chosen:
            ms[case]["ratio"] = ms[case]["ms"] / quiet
            ms[case]["ratio_to_paused"] = ms[case]["ms"] / ms[own_pause(case)]["ms"]
        results.append({"row": row, "threads": a.threads, "cases": ms})
        write(a.out, results, chosen)  # each row as it is done

        def cell(m: dict, shared: bool) -> str:
            text = f"{m['ms']:.3f} ({m['ratio']:.2f} / {m['ratio_to_paused']:.2f}"
            return text + (f"; {m['stalled_regions']}, {m['rests']})" if shared else ")")

        cells = [cell(ms[c], CASES[c].shared) for c in chosen]
        print(f"| {row} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
