"""How much CPU each of a library's threads gets while it runs a row back to back, idle and
beside K busy processes: a profile of the under-load rows (issue: a parallel runtime that
keeps its speed under load).

    python3 benchmarks/thread_shares.py --rows 3,4 --threads 2 --under-load 1 [--seconds 2]
                                        [--libraries rnngraph,rnngraph-nomoves,ort]

Each (library, row) runs in a fresh process of its own. It times the row's call back to back
for --seconds idle, then again while K busy processes (load.busy) run, and reads each of its
threads' CPU time and context switches from /proc before and after each phase. Prints, per
phase, the median call and every thread that ran: its share of the phase's wall time on a
CPU (100 %: a whole CPU) and waiting on a run queue (runnable, but another thread had its
CPU; from /proc/self/task/*/schedstat, 0 where the kernel lacks it), and its voluntary (it
slept: futex, condition variable) and involuntary (it stayed runnable: the scheduler took its
CPU, or it yielded it to another thread) switches per call; for
rnngraph, also its workers' moves to another core per call (runtime/core_moves.hpp).
"rnngraph-nomoves" is rnngraph with those moves turned off (the workers yield instead). The
last line is the JSON of every measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

from load import busy
from rows import BY_ID, parse_rows
from script_child import die_with_parent, run_json
from settle import thread_cpu_ns, thread_runqueue_ns, thread_switches

HERE = Path(__file__).resolve().parent
RNNGRAPH = ("rnngraph", "rnngraph-nomoves")  # the second with its workers' moves turned off


def thread_counters() -> dict[int, tuple[float, float, int, int]]:
    """{thread id: (CPU seconds, run-queue seconds, voluntary switches, involuntary switches)}
    of this process's live threads (settle.py's readers of /proc/self/task)."""
    cpu, waits, switches = thread_cpu_ns(), thread_runqueue_ns(), thread_switches()
    return {tid: (ns / 1e9, waits.get(tid, 0) / 1e9, *switches[tid])
            for tid, ns in cpu.items() if tid in switches}


def worker_moves(library: str) -> int:
    """rnngraph's workers' moves so far (0 for another library)."""
    if library not in RNNGRAPH:
        return 0
    from rnngraph._native import core

    return core._worker_moves()


def phase(step, seconds: float, library: str = "") -> dict:
    """The row's call back to back for ``seconds``: median ms, and each thread's share."""
    for _ in range(20):
        step()
    before, moves = thread_counters(), worker_moves(library)
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    wall = time.perf_counter() - start
    after, moves = thread_counters(), worker_moves(library) - moves
    threads = []
    for tid, (cpu, wait, vol, inv) in after.items():
        cpu0, wait0, vol0, inv0 = before.get(tid, (0.0, 0.0, 0, 0))
        if cpu - cpu0 > 0 or vol - vol0 or inv - inv0:
            threads.append({"tid": tid, "main": tid == os.getpid(),
                            "cpu_share": (cpu - cpu0) / wall,
                            "runqueue_share": (wait - wait0) / wall,
                            "voluntary_per_call": (vol - vol0) / len(times),
                            "involuntary_per_call": (inv - inv0) / len(times)})
    threads.sort(key=lambda t: (not t["main"], -t["cpu_share"]))
    return {"median_ms": statistics.median(times) * 1e3, "calls": len(times),
            "moves_per_call": moves / len(times), "threads": threads}


def child(library: str, row_id: int, threads: int, k: int, seconds: float) -> dict:
    """One (library, row): idle, then beside ``k`` busy processes."""
    row = BY_ID[row_id]
    if library in RNNGRAPH:
        import ours

        import rnngraph
        from rnngraph._native import core

        rnngraph.set_num_threads(threads)
        core._set_worker_moves(library == "rnngraph")
        step = ours.make_step(row)
    else:
        import peers

        step = peers.ort_step(row, threads)
    record = {"library": library, "row": row_id, "threads": threads, "k": k,
              "idle": phase(step, seconds, library)}
    with busy(k):
        time.sleep(0.5)  # the spinners settle on the CPUs
        record["loaded"] = phase(step, seconds, library)
    return record


def report(records: list[dict]) -> None:
    print("| row | library | phase | median ms | moves per call | threads: CPU share / run-queue "
          "share, voluntary / involuntary switches per call (main thread first) |")
    print("|---|---|---|---|---|---|")
    for r in records:
        for name in ("idle", "loaded"):
            p = r[name]
            shares = "; ".join(f"{t['cpu_share']:.0%} / {t['runqueue_share']:.0%}, "
                               f"{t['voluntary_per_call']:.2f} / {t['involuntary_per_call']:.2f}"
                               for t in p["threads"])
            label = name if name == "idle" else f"beside {r['k']} busy"
            print(f"| {r['row']} | {r['library']} | {label} | {p['median_ms']:.3g} | "
                  f"{p['moves_per_call']:.2f} | {shares} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="3,4")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--under-load", type=int, default=1, metavar="K")
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--libraries", default="rnngraph,ort")
    p.add_argument("--child", help=argparse.SUPPRESS)  # library:row, run in this process
    args = p.parse_args()
    if args.child:
        die_with_parent()
        library, row = args.child.split(":")
        print(json.dumps(child(library, int(row), args.threads, args.under_load, args.seconds)))
        return
    records = []
    for row in parse_rows(args.rows):
        for library in args.libraries.split(","):
            records.append(run_json(HERE / "thread_shares.py", [
                "--child", f"{library}:{row.id}", "--threads", str(args.threads),
                "--under-load", str(args.under_load), "--seconds", str(args.seconds)],
                timeout_s=120 + 4 * args.seconds))
    report(records)
    print(json.dumps(records))


if __name__ == "__main__":
    main()
