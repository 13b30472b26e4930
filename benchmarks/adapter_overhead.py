"""The PyTorch adapter's cost over rnngraph.Graph, measured in one process: the Graph's
training step (ours.make_step) and the adapter's (adapter.row_step) alternate, so a slow
spell of the machine falls on both, and the median of the paired differences is the cost.
It complements bench_torch_adapter.py, whose processes each run one library (there the
process-to-process spread is a few percent of a step).

    python3 benchmarks/adapter_overhead.py --rows 7 8 --threads 1 2 [--reps 40]
"""

from __future__ import annotations

import argparse
import statistics
import time

from rows import BY_ID


def paired(row_id: int, threads: int, reps: int) -> dict:
    import adapter
    import ours
    import torch

    import rnngraph as rg

    torch.set_num_threads(threads)
    rg.set_num_threads(threads)
    row = BY_ID[row_id]
    graph_step, adapter_step = ours.make_step(row), adapter.row_step(row)
    for _ in range(3):
        graph_step()
        adapter_step()
    times: dict[str, list[float]] = {"graph": [], "adapter": []}
    for _ in range(reps):
        for name, step in (("graph", graph_step), ("adapter", adapter_step)):
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    graph, ours_ms = (statistics.median(times[k]) * 1e3 for k in ("graph", "adapter"))
    cost = statistics.median(a - g for g, a in zip(times["graph"], times["adapter"])) * 1e3
    return {"row": row_id, "threads": threads, "graph_ms": graph, "adapter_ms": ours_ms,
            "paired_cost_ms": cost, "cost_share": cost / graph}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[7, 8])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    print("| row | threads | Graph ms | adapter ms | paired cost ms | cost / Graph |")
    print("|---|---|---|---|---|---|")
    for row in args.rows:
        for threads in args.threads:
            r = paired(row, threads, args.reps)
            print(f"| {row} | {threads} | {r['graph_ms']:.2f} | {r['adapter_ms']:.2f} | "
                  f"{r['paired_cost_ms']:.3f} | {r['cost_share']:+.1%} |", flush=True)


if __name__ == "__main__":
    main()
