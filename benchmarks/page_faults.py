"""Page faults and system time per call of each row's step (ours.make_step), each row in a
fresh process of its own: what a training loop that runs one model sees. A process that
ran other rows first has had glibc's heap shaped by them, which can hide the faults of a
row run alone.

    python3 benchmarks/page_faults.py --rows 7-15 --threads 1 2
    PYTHONPATH=/tmp/rnngraph-ab-old python3 benchmarks/page_faults.py --rows 8   # another build

Prints one line per (row, threads): minor page faults and system-time ms per call, and the
median call in ms.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics


def child(row_id: int, threads: int, reps: int) -> dict:
    """Runs in the fresh process: warm-up calls, then ``reps`` measured ones."""
    import time

    from ours import make_step
    from rows import BY_ID

    import rnngraph as rg

    rg.set_num_threads(threads)
    step = make_step(BY_ID[row_id])
    for _ in range(5):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"row": row_id, "threads": threads,
            "faults_per_call": (after.ru_minflt - before.ru_minflt) / reps,
            "system_ms_per_call": 1e3 * (after.ru_stime - before.ru_stime) / reps,
            "median_ms": 1e3 * statistics.median(times), "file": rg.__file__}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="7-15")
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], a.reps)))
        return
    from rows import parse_rows
    from script_child import run_json

    for row in parse_rows(a.rows):
        for n in a.threads:
            r = run_json(__file__, ["--child", str(row.id), str(n), "--reps", str(a.reps)])
            print(f"row {row.id:2d} @{n:2d}: {r['faults_per_call']:8.1f} faults/call, "
                  f"{r['system_ms_per_call']:6.2f} ms system/call, median {r['median_ms']:.3f} ms",
                  flush=True)


if __name__ == "__main__":
    main()
