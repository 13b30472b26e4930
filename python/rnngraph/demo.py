"""``python3 -m rnngraph.demo``: build a graph, run forward and gradients, check the gradients
against finite differences, and time a training step."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

import rnngraph as rg

if TYPE_CHECKING:
    from numpy.typing import DTypeLike, NDArray


def build(T: int, N: int, I: int, H: int, dtype: rg.DataType
          ) -> tuple[rg.Graph, tuple[rg.Tensor, ...], rg.Tensor, list[rg.Tensor]]:
    """An LSTM graph with its gradient op: returns (graph, placeholders, outputs, gradients)."""
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=dtype, name="x")
    R = g.placeholder(shape=(4 * H, H), dataType=dtype, name="R")
    W = g.placeholder(shape=(4 * H, I), dataType=dtype, name="W")
    b = g.placeholder(shape=(4 * H,), dataType=dtype, name="b")
    dy = g.placeholder(shape=(T, N, H), dataType=dtype, name="dy")
    d = rg.LSTMDescriptor(training=True)
    h, c, z = g.LSTM(x, recurrentWeight=R, inputWeight=W, bias=b, descriptor=d, name="lstm")
    grads = g.LSTMGradients(x, recurrentWeight=R, sourceGradient=dy, zState=z, cellOutputFwd=c,
                            inputWeight=W, bias=b, descriptor=d, name="lstm_grad")
    return g, (x, R, W, b, dy), h, grads


def random_feeds(placeholders: Iterable[rg.Tensor], rng: np.random.Generator,
                 dtype: DTypeLike) -> dict[rg.Tensor, NDArray[Any]]:
    # The demo's placeholders have fully known shapes (no None).
    return {p: (0.5 * rng.standard_normal(p.shape)).astype(dtype)  # type: ignore[arg-type]
            for p in placeholders}


def finite_difference_check(rng: np.random.Generator) -> float:
    """Worst relative error of dL/dR against central differences, L = Σ h·dy (float64)."""
    T, N, I, H = 4, 2, 3, 3
    g, placeholders, h, grads = build(T, N, I, H, rg.float64)
    feeds = random_feeds(placeholders, rng, np.float64)
    R = placeholders[1]
    dy = feeds[placeholders[4]]
    analytic = g.run(feeds=feeds, targetTensors=[grads[1]])[grads[1]]
    numeric = np.zeros_like(analytic)
    eps = 1e-6
    for index in np.ndindex(numeric.shape):
        for sign in (1, -1):
            shifted = dict(feeds)
            shifted[R] = feeds[R].copy()
            shifted[R][index] += sign * eps
            numeric[index] += sign * np.sum(g.run(feeds=shifted, targetTensors=[h])[h] * dy)
    numeric /= 2 * eps
    return float(np.max(np.abs(analytic - numeric)) / max(1.0, np.max(np.abs(numeric))))


def time_training_step(rng: np.random.Generator, T: int = 50, N: int = 32, I: int = 256,
                       H: int = 256, repeats: int = 10) -> tuple[float, float]:
    g, placeholders, _, grads = build(T, N, I, H, rg.float32)
    feeds = random_feeds(placeholders, rng, np.float32)
    g.run(feeds=feeds, targetTensors=grads)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        g.run(feeds=feeds, targetTensors=grads)
        times.append(time.perf_counter() - start)
    seconds = float(np.median(times))
    flops = 3 * 2 * 4 * H * N * (I + H) * T  # forward + backward, benchdnn's convention
    return seconds, flops / seconds / 1e9


def main() -> None:
    rng = np.random.default_rng(0)
    rg.show_config()
    print()
    g, placeholders, h, grads = build(T=5, N=2, I=3, H=4, dtype=rg.float32)
    out = g.run(feeds=random_feeds(placeholders, rng, np.float32), targetTensors=[h, *grads])
    print("LSTM forward h:", out[h].shape, "gradients:",
          ", ".join(f"{t.name} {out[t].shape}" for t in grads))
    error = finite_difference_check(rng)
    print(f"finite-difference check of dL/drecurrentWeight (float64): max relative error {error:.2e}")
    assert error < 1e-6, "gradient check failed"
    seconds, gflops = time_training_step(rng)
    print(f"LSTM training step T=50 N=32 I=H=256 float32: {seconds * 1e3:.1f} ms "
          f"({gflops:.0f} GFLOP/s, {rg.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
