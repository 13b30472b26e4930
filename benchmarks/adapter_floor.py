"""What any torch.autograd.Function around rnngraph's kernels costs, against the adapter: a
training step of a unidirectional LSTM row (forward plus ``out.backward(dy)``) through the
thinnest Function that calls the same kernels (tensors to NumPy, the core's rnn_forward, its
rnn_gradients on what the forward kept, NumPy back to tensors: no checks, no layouts, no
options handling) and through rnngraph.torch.LSTM, alternating in one process. Each step is
split into the time inside the kernels and the rest (adapter_overhead.kernel_split): the
floor's rest is torch's own cost (Function.apply, the engine, gradient accumulation); the
adapter's rest above it is rnngraph.torch's Python.

    python3 benchmarks/adapter_floor.py --rows 7 8 --threads 1 2 [--reps 60]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

from adapter_overhead import alternate, kernel_split
from rows import BY_ID, Row


def steps(row: Row) -> tuple[dict[str, Callable[[], None]], list[Any]]:
    """The floor's and the adapter's training step on the same tensors and weights, and
    those leaves (x, h0, c0, W, R, b), whose ``.grad`` each step sets."""
    import torch

    import rnngraph.torch as rt
    from rnngraph._native import core
    from rnngraph.torch import _ops

    if row.cell != "LSTM" or row.bidirectional or row.mode != "train":
        raise ValueError(f"row {row.id}: the floor is written for unidirectional LSTM training")
    T, N, I, H = row.T, row.N, row.I, row.H
    torch.manual_seed(0)
    module = rt.LSTM.from_torch(torch.nn.LSTM(I, H))
    cell = module._cell
    options = _ops.core_options(cell, module._options)
    W, R, b = (module._parameters[k] for k in ("inputWeight", "recurrentWeight", "bias"))
    x = torch.randn(T, N, I, requires_grad=True)
    h0, c0 = (torch.randn(1, N, H, requires_grad=True) for _ in range(2))
    dy = torch.randn(T, N, H)
    leaves = [x, h0, c0, W, R, b]

    class Floor(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *tensors: torch.Tensor) -> torch.Tensor:
            x, W, R, b, h0, c0 = (t.detach().numpy() for t in tensors)
            dense = {"source": x, "inputWeight": W, "recurrentWeight": R, "bias": b,
                     "initState": h0.reshape(N, H), "initCell": c0.reshape(N, H)}
            h, c, z, *_ = core.rnn_forward(options, dense, training=True, final_states=True)
            ctx.kept = {**dense, "zState": z, "cellOutputFwd": c}
            return torch.from_numpy(h)

        @staticmethod
        def backward(ctx: Any, dh: torch.Tensor) -> tuple[torch.Tensor, ...]:
            g = core.rnn_gradients(options, {**ctx.kept, "sourceGradient": dh.numpy()})
            return (torch.from_numpy(g["source"]), torch.from_numpy(g["inputWeight"]),
                    torch.from_numpy(g["recurrentWeight"]), torch.from_numpy(g["bias"]),
                    torch.from_numpy(g["initState"].reshape(1, N, H)),
                    torch.from_numpy(g["initCell"].reshape(1, N, H)))

    def floor() -> None:
        for leaf in leaves:
            leaf.grad = None
        Floor.apply(x, W, R, b, h0, c0).backward(dy)

    def adapter() -> None:
        for leaf in leaves:
            leaf.grad = None
        module(x, (h0, c0))[0].backward(dy)

    return {"floor": floor, "adapter": adapter}, leaves


def measure(row_id: int, threads: int, reps: int) -> dict[str, Any]:
    import torch

    import rnngraph as rg

    torch.set_num_threads(threads)
    rg.set_num_threads(threads)
    paired = steps(BY_ID[row_id])[0]
    times, inside = alternate(paired, reps, kernels=True)
    result: dict[str, Any] = {"row": row_id, "threads": threads,
                              **{f"{name}_ms": statistics.median(times[name]) * 1e3
                                 for name in paired},
                              **kernel_split(times, inside)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[7, 8])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=60)
    args = parser.parse_args()
    print("| row | threads | floor ms | floor kernels / outside ms | adapter ms | "
          "adapter kernels / outside ms |")
    print("|---|---|---|---|---|---|")
    for row in args.rows:
        for threads in args.threads:
            r = measure(row, threads, args.reps)
            print(f"| {row} | {threads} | {r['floor_ms']:.2f} | {r['floor_kernels_ms']:.2f} / "
                  f"{r['floor_outside_ms']:.3f} | {r['adapter_ms']:.2f} | "
                  f"{r['adapter_kernels_ms']:.2f} / {r['adapter_outside_ms']:.3f} |",
                  flush=True)


if __name__ == "__main__":
    main()
