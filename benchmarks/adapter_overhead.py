"""The PyTorch adapter's training step against a baseline, measured in one process: the
baseline's step and the adapter's (adapter.row_step) alternate, so a slow spell of the
machine falls on both, and the median of the paired differences is the adapter's cost.
It complements bench_torch_adapter.py, whose processes each run one library (there the
process-to-process spread is a few percent of a step, and on a noisy machine far more).

Baselines:
- ``graph`` (default): the same computation through rnngraph.Graph (ours.make_step): the
  adapter's own cost.
- ``torch``: the row's torch.nn module (peers.torch_step), the model the adapter replaces.
  Both run on torch's OpenMP threads (rnngraph.torch's default pool), so no second thread
  pool spins beside the one measured: this is a training loop that swaps nn.LSTM for
  rnngraph.torch.LSTM.

    python3 benchmarks/adapter_overhead.py --rows 7 8 --threads 1 2 [--reps 40]
    python3 benchmarks/adapter_overhead.py --baseline torch --rows 10 11 --threads 2
    python3 benchmarks/adapter_overhead.py --baseline torch --rows --model --threads 1 2

``--kernels`` also splits each step into the time inside rnngraph's kernels (the core's
rnn_forward and rnn_gradients, timed around each call) and the rest (Python, torch's
autograd, the Graph's own bookkeeping), medians per step (``--baseline graph`` only):

    python3 benchmarks/adapter_overhead.py --rows 8 --threads 2 --kernels

``--model`` pairs adapter.model_step's language-model training step (embedding, LSTM, linear
head, cross-entropy, SGD) with rnngraph.torch.LSTM against the same model with nn.LSTM
(``--baseline torch`` only; row "LM" in the table).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

from rows import BY_ID

# --baseline -> (the library whose step inprocess.library_step builds, the tables' label)
BASELINES = {"graph": ("rnngraph", "Graph"), "torch": ("torch", "torch.nn")}


def paired_steps(row_id: int | str, baseline: str, threads: int = 1) -> dict[str, Callable]:
    """The baseline's and the adapter's step for a BENCHMARKS.md row, or for "LM" (the
    language model of adapter.model_step, against the same model with nn.LSTM)."""
    import adapter
    import inprocess

    if row_id == "LM":
        if baseline != "torch":
            raise ValueError("the language-model step is paired with torch.nn only")
        return {"baseline": adapter.model_step("torch"), "adapter": adapter.model_step("rnngraph")}
    row = BY_ID[row_id]
    library = BASELINES[baseline][0]
    return {"baseline": inprocess.library_step(library, row, threads),
            "adapter": adapter.row_step(row)}


KERNELS = ("rnn_forward", "rnn_gradients")  # the core's entry points that run the kernels


@contextlib.contextmanager
def kernel_clock() -> Iterator[list[float]]:
    """Times every call of the core's kernels while active: yields the list that each call's
    seconds are appended to (the Graph and the adapter both look them up on the core module
    at call time)."""
    from rnngraph._native import core

    spent: list[float] = []
    originals = {name: getattr(core, name) for name in KERNELS}

    def timed(kernel: Callable) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return kernel(*args, **kwargs)
            finally:
                spent.append(time.perf_counter() - start)
        return call

    for name, kernel in originals.items():
        setattr(core, name, timed(kernel))
    try:
        yield spent
    finally:
        for name, kernel in originals.items():
            setattr(core, name, kernel)


def paired(row_id: int | str, threads: int, reps: int, baseline: str = "graph",
           kernels: bool = False) -> dict:
    import torch

    import rnngraph as rg

    torch.set_num_threads(threads)
    rg.set_num_threads(threads)
    steps = paired_steps(row_id, baseline, threads)
    times, inside = alternate(steps, reps, kernels)
    base, ours_ms = (statistics.median(times[k]) * 1e3 for k in ("baseline", "adapter"))
    cost = statistics.median(a - b for b, a in zip(times["baseline"], times["adapter"])) * 1e3
    result = {"row": row_id, "threads": threads, "baseline": baseline, "baseline_ms": base,
              "adapter_ms": ours_ms, "paired_cost_ms": cost, "cost_share": cost / base}
    if kernels:
        result.update(kernel_split(times, inside))
    return result


def alternate(steps: dict[str, Callable[[], Any]], reps: int,
              kernels: bool = False) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each of ``steps`` run in turn, ``reps`` times after 3 warm-up rounds: their seconds per
    call by name, and (with ``kernels``, else zeros) the seconds spent inside the kernels."""
    for _ in range(3):
        for step in steps.values():
            step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    inside: dict[str, list[float]] = {name: [] for name in steps}
    with kernel_clock() if kernels else contextlib.nullcontext([]) as spent:
        for _ in range(reps):
            for name, step in steps.items():
                spent.clear()
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
                inside[name].append(sum(spent))
    return times, inside


def kernel_split(times: dict[str, list[float]],
                 inside: dict[str, list[float]]) -> dict[str, float]:
    """Per step name: the median ms inside the kernels ("<name>_kernels_ms") and of the rest
    ("<name>_outside_ms", the median of each call's difference)."""
    split = {}
    for name, calls in times.items():
        split[f"{name}_kernels_ms"] = statistics.median(inside[name]) * 1e3
        split[f"{name}_outside_ms"] = statistics.median(
            t - k for t, k in zip(calls, inside[name])) * 1e3
    return split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[7, 8],
                        help="BENCHMARKS.md rows (none: only --model)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--baseline", choices=tuple(BASELINES), default="graph")
    parser.add_argument("--model", action="store_true",
                        help="also the language-model step (with --baseline torch)")
    parser.add_argument("--kernels", action="store_true",
                        help="also each step's time inside and outside rnngraph's kernels")
    args = parser.parse_args()
    if args.model and args.baseline != "torch":
        parser.error("--model needs --baseline torch")
    if args.kernels and args.baseline != "graph":
        parser.error("--kernels needs --baseline graph (torch.nn runs no rnngraph kernel)")
    label = BASELINES[args.baseline][1]
    split = (f" | {label} kernels ms | {label} outside ms | adapter kernels ms | "
             "adapter outside ms" if args.kernels else "")
    print(f"| row | threads | {label} ms | adapter ms | paired cost ms | cost / {label} | "
          f"{label} / adapter{split} |")
    print("|---|---|---|---|---|---|---|" + ("---|" * 4 if args.kernels else ""))
    for row in [*args.rows, *(["LM"] if args.model else [])]:
        for threads in args.threads:
            r = paired(row, threads, args.reps, args.baseline, args.kernels)
            cells = "".join(f" {r[f'{name}_{part}_ms']:.3f} |" for name in ("baseline", "adapter")
                            for part in ("kernels", "outside")) if args.kernels else ""
            print(f"| {row} | {threads} | {r['baseline_ms']:.2f} | {r['adapter_ms']:.2f} | "
                  f"{r['paired_cost_ms']:.3f} | {r['cost_share']:+.1%} | "
                  f"{r['baseline_ms'] / r['adapter_ms']:.2f}× |{cells}", flush=True)


if __name__ == "__main__":
    main()
