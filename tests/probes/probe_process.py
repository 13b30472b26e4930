"""What the probe drivers share: this process's memory from /proc/self/status, and an LSTM
training graph on placeholders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import rnngraph as rg


def status_bytes(field: str) -> int:
    """A size field of /proc/self/status (VmSize, VmRSS, ...) in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def lstm_training_graph(T: int, N: int, I: int, H: int, seed: int, scale: float = 0.1
                        ) -> tuple[rg.Graph, dict[rg.Tensor, Any], list[rg.Tensor]]:
    """An LSTM forward op (training) and its gradient op on placeholders, weights fed:
    (graph, feeds, [h, dsource, drecurrentWeight, dinputWeight]). (rnngraph is imported
    here, not with this module: a driver may set limits before it loads the package.)"""
    import numpy as np

    import rnngraph as rg

    rng = np.random.default_rng(seed)
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
    R = g.placeholder(shape=(4 * H, H), dataType=rg.float32, name="R")
    W = g.placeholder(shape=(4 * H, I), dataType=rg.float32, name="W")
    dy = g.placeholder(shape=(T, N, H), dataType=rg.float32, name="dy")
    d = rg.LSTMDescriptor(training=True)
    h, c, z = g.LSTM(x, recurrentWeight=R, inputWeight=W, descriptor=d)
    grads = g.LSTMGradients(x, recurrentWeight=R, sourceGradient=dy, zState=z, cellOutputFwd=c,
                            inputWeight=W, descriptor=d)
    feeds = {x: rng.standard_normal((T, N, I)).astype(np.float32),
             R: (rng.standard_normal((4 * H, H)) * scale).astype(np.float32),
             W: (rng.standard_normal((4 * H, I)) * scale).astype(np.float32),
             dy: np.ones((T, N, H), np.float32)}
    return g, feeds, [h, *grads]
