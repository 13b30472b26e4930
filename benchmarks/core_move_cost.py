"""What one worker move costs (runtime/core_moves.hpp): narrowing the calling thread's
affinity mask to another core, which migrates it there before the call returns, then setting
the old mask back; against the same two calls with no migration. Medians of 2000, in µs.

    python3 benchmarks/core_move_cost.py
"""

import os
import statistics
import time


def main() -> None:
    mask = os.sched_getaffinity(0)
    cpus = sorted(mask)
    if len(cpus) < 2:
        raise SystemExit("needs two CPUs in this process's affinity mask")
    moves, stays = [], []
    for i in range(2000):
        t = time.perf_counter_ns()
        os.sched_setaffinity(0, {cpus[i % 2]})
        os.sched_setaffinity(0, mask)
        moves.append(time.perf_counter_ns() - t)
    for _ in range(2000):
        t = time.perf_counter_ns()
        os.sched_setaffinity(0, mask)
        os.sched_setaffinity(0, mask)
        stays.append(time.perf_counter_ns() - t)
    print(f"a move (to the other core and the mask back): {statistics.median(moves) / 1e3:.1f} us;"
          f" the two calls without a migration: {statistics.median(stays) / 1e3:.1f} us")


if __name__ == "__main__":
    main()
