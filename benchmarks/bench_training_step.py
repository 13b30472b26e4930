"""A whole training step inside one rnngraph.Graph (examples/char_lstm.py: embedding gather,
LSTM, matmul head, softMaxCrossEntropy, gradients, Adam through assign) at row-7 size
(T=150, N=16, E=I=256, H=256, the corpus's characters as the vocabulary), and the split of
its time between the recurrent kernels (LSTM, LSTMGradients) and the ops around them; the
same model in PyTorch (nn.Embedding, nn.LSTM, nn.Linear, cross-entropy, torch.optim.Adam)
for comparison. Each library runs in a process of its own; medians; the same-run sgemm
ceiling is recorded beside them.

    python3 benchmarks/bench_training_step.py --threads 1 2 [--budget 4] [--out PATH]

The split: every op's compute is timed inside Graph.run (by wrapping it); "around" is every
op but the recurrent ones, "run overhead" is the step's time outside any op's compute.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))
sys.path.insert(0, str(HERE))

from script_child import run_json
from timing import measure

RECURRENT = ("LSTM", "LSTMGradients")
SIZE = {"embed": 256, "hidden": 256, "T": 150, "N": 16}  # row 7 of BENCHMARKS.md


def _model_inputs():
    import numpy as np
    from char_lstm import TEXT, Codec, Sizes, batches

    text = TEXT.read_text()
    codec = Codec(text)
    sizes = Sizes(vocab=len(codec.alphabet), **SIZE)
    return sizes, next(batches(codec.encode(text), sizes, np.random.default_rng(0)))


def _timed_ops(graph, spent):
    """Wrap every op's compute to add its time to ``spent[op.kind]``."""
    for op in graph._ops:
        if op.compute is None:
            continue

        def timed(arrays, compute=op.compute, kind=op.kind):
            start = time.perf_counter()
            try:
                return compute(arrays)
            finally:
                spent[kind] += time.perf_counter() - start

        op.compute = timed


def rnngraph_child(threads: int, budget: float) -> dict:
    from char_lstm import CharLSTM

    import rnngraph as rg

    rg.set_num_threads(threads)
    sizes, (inputs, targets) = _model_inputs()
    model = CharLSTM(sizes, seed=0)
    spent: dict = defaultdict(float)
    _timed_ops(model.graph, spent)
    kinds = []

    def step():
        spent.clear()
        model.train_step(inputs, targets)
        kinds.append(dict(spent))

    timed = measure(step, budget_s=budget, settle_s=0)  # as torch_child's
    kinds = kinds[-timed["reps"]:]  # the timed steps' (not the warm-up's)
    median = timed["median_ms"]
    per_kind = {k: statistics.median(s.get(k, 0.0) for s in kinds) * 1e3
                for k in set().union(*kinds)}
    recurrent = sum(per_kind.get(k, 0.0) for k in RECURRENT)
    ops_total = statistics.median(sum(s.values()) for s in kinds) * 1e3
    return {"library": "rnngraph", "threads": threads, "median_ms": median,
            "reps": timed["reps"], "recurrent_ms": recurrent,
            "around_ms": ops_total - recurrent, "run_overhead_ms": median - ops_total,
            "by_kind_ms": dict(sorted(per_kind.items(), key=lambda kv: -kv[1]))}


def torch_child(threads: int, budget: float) -> dict:
    import torch
    from char_lstm import initial_parameters, torch_loss, torch_twin

    torch.set_num_threads(threads)
    sizes, (inputs, targets) = _model_inputs()
    model = torch_twin(sizes, initial_parameters(sizes, seed=0))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

    def step():
        optimizer.zero_grad()
        torch_loss(model, inputs, targets).backward()
        optimizer.step()

    timed = measure(step, budget_s=budget, settle_s=0)  # a fresh process: nothing to settle
    return {"library": "torch", "threads": threads, "median_ms": timed["median_ms"],
            "reps": timed["reps"]}


def ceiling_child(threads: int, budget: float) -> dict:
    from ceiling import sgemm_ceiling

    return {"library": "sgemm", "threads": threads,
            **sgemm_ceiling(threads, budget_s=min(budget, 2.0))}


CHILDREN = {"rnngraph": rnngraph_child, "torch": torch_child, "sgemm": ceiling_child}


def run_child(library: str, threads: int, budget: float) -> dict:
    return run_json(__file__, ["--child", library, str(threads), str(budget)])


def table(results: list[dict]) -> str:
    ours = {r["threads"]: r for r in results if r["library"] == "rnngraph"}
    torch = {r["threads"]: r for r in results if r["library"] == "torch"}
    ceiling = {r["threads"]: r for r in results if r["library"] == "sgemm"}
    lines = [("| threads | rnngraph step ms | recurrent kernels ms | ops around ms | run overhead ms "
              "| around + overhead share | torch step ms | torch / rnngraph | sgemm GFLOP/s |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for t, r in sorted(ours.items()):
        share = (r["around_ms"] + r["run_overhead_ms"]) / r["median_ms"]
        peer = torch.get(t, {}).get("median_ms", float("nan"))
        gflops = ceiling.get(t, {}).get("gflops", float("nan"))
        lines.append(f"| {t} | {r['median_ms']:.2f} | {r['recurrent_ms']:.2f} | "
                     f"{r['around_ms']:.2f} | {r['run_overhead_ms']:.2f} | {share:.1%} | "
                     f"{peer:.2f} | {peer / r['median_ms']:.2f}× | {gflops:.0f} |")
    kinds = ["", "Time by op kind (median ms per step):", "",
             "| threads | " + " | ".join(f"{k}" for k in list(ours[min(ours)]["by_kind_ms"])[:12]) + " |"]
    first = list(ours[min(ours)]["by_kind_ms"])[:12]
    kinds.append("|---" * (len(first) + 1) + "|")
    for t, r in sorted(ours.items()):
        kinds.append(f"| {t} | " + " | ".join(f"{r['by_kind_ms'].get(k, 0):.2f}" for k in first) + " |")
    return "\n".join(lines + kinds) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        library, threads, budget = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
        print(json.dumps(CHILDREN[library](threads, budget)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--budget", type=float, default=4.0, help="seconds of steps per process")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results = []
    for threads in args.threads:
        for library in ("sgemm", "rnngraph", "torch"):
            results.append(run_child(library, threads, args.budget))
            print(json.dumps(results[-1]), flush=True)
    text = (f"`python3 benchmarks/bench_training_step.py {' '.join(sys.argv[1:])}`: the row-7 "
            f"character LSTM ({SIZE}), each library in its own process, medians\n\n"
            + table(results))
    print(text)
    if args.out is None:
        stamp = time.strftime("%Y-%m-%dT%H%M%S")
        args.out = HERE / "results" / f"training-step-{stamp}"
    args.out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(text)


if __name__ == "__main__":
    main()
