"""Resident memory over repeated Graph builds and runs (run by test_memory_probe.py in a
process of its own, so that nothing else the test session did is in its RSS).

RSS is read from /proc/self/status (VmRSS). The starting point is taken after importing
rnngraph, one tiny op (its worker threads and BLAS started) and a NumPy random generator (the
scenarios' inputs: numpy.random loads OpenSSL's libcrypto through hashlib, 3.4 MiB of code
pages that would otherwise count as the first scenario's). Each scenario builds a
Graph, runs it a few times, drops every reference to it and its outputs, and records RSS
(after gc.collect(), except in the scenario that keeps the collector off throughout); it
repeats that ``builds`` times. Then, with nothing of the user's
left, RSS is read again until rnngraph keeps nothing (its releaser gives kept memory back
after an idle second) and RSS is back within ``TOLERANCE`` of the starting point, or until
``SETTLE`` seconds have passed (the wait is a deadline, not a measurement).

Prints one JSON line: {"start_mib", "back_within_mib", "scenarios": {name: {"series_mib",
"growth_mib", "final_mib", "excess_mib"}}} (back_within_mib: TOLERANCE).
"""

from __future__ import annotations

import gc
import json
import sys
import time

import numpy as np
from probe_process import lstm_training_graph, status_bytes

import rnngraph as rg

MIB = 1 << 20
# What a worker thread keeps for the process's life once it has run a large call: the BLAS's
# packing buffers (OpenBLAS maps 32 MiB per calling thread and keeps the pages its GEMMs
# touched) and the C library's per-thread heap. Nothing rnngraph can give back:
# release_memory() and malloc_trim(0) leave it, and repeated builds do not add to it.
# Measured after the whole probe (the large batch last), kept_memory() at 0: on the 16-core
# machine 11.1 MiB above the start at 16 threads and 3.2 MiB at 8; on the 2-core machine 3.3
# MiB at 2 threads and 7.1 MiB at 8 (2026-11-30). Before the driver loaded numpy.random ahead
# of its start and waited for the idle release, the 16-thread figure was 16.5-24.5 MiB (once
# over the 20 MiB this limit had been). Memory kept per call or per thread by rnngraph (the
# thread scratch before f6e3d2f: 122 MiB; blocks freed into malloc's thread arenas before
# rnngraph mapped them itself: 104-111 MiB at 8 threads) is far above it.
PER_THREAD_MIB = 1
BACK_WITHIN_MIB = 20 + PER_THREAD_MIB * rg.get_num_threads()
TOLERANCE = BACK_WITHIN_MIB * MIB
SETTLE = 15.0  # seconds: a deadline for memory to come back, not a timing assertion
WARM = 3  # builds before the flatness reference point
# The large batch fills rnngraph's kept blocks (rnngraph/memory.hpp, kKeptBytes) over its first
# builds, and with 8 workers on 2 CPUs in an order that varies: after the other scenarios, RSS
# after each build reached its plateau at build 3 or 4 (1093.7, 1134.2, 1142.4, 1166.4 MiB once
# in five runs of the probe, 2-core Zen 5, 2026-12-02; alone it was flat from build 3,
# 1167.5-1167.8 MiB, in five of five). So it warms up over 4 builds and is then held flat over 4.
LARGE_BATCH_WARM = 4


def settle(start: int) -> int:
    """RSS once rnngraph has given its kept memory back by itself (after an idle second) and
    RSS is within TOLERANCE of ``start``, or at the deadline."""
    deadline = time.monotonic() + SETTLE
    while True:
        gc.collect()
        released = rg.kept_memory() == 0
        now = status_bytes("VmRSS")
        if (released and now - start <= TOLERANCE) or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def weights(rng: np.random.Generator, rows: int, cols: int) -> np.ndarray:
    return (rng.standard_normal((rows, cols)) * 0.05).astype(np.float32)


def lstm_inference(seed: int, T: int = 16, N: int = 32, I: int = 256, H: int = 256) -> None:
    """Constant weights (packed once, kept by the Graph), forward only."""
    rng = np.random.default_rng(seed)
    g = rg.Graph()
    x = g.placeholder(shape=(None, N, I), dataType=rg.float32, name="x")
    h, c = g.LSTM(x, recurrentWeight=weights(rng, 4 * H, H), inputWeight=weights(rng, 4 * H, I),
                  bias=np.zeros(4 * H, np.float32), descriptor=rg.LSTMDescriptor(produceCell=True))
    feeds = {x: rng.standard_normal((T, N, I)).astype(np.float32)}
    for _ in range(4):
        out = g.run(feeds=feeds, targetTensors=[h, c])
    assert out[h].shape == (T, N, H)


def lstm_training(seed: int, T: int = 16, N: int = 32, I: int = 256, H: int = 256) -> None:
    """Weights fed through placeholders (packed per call), forward and gradient ops."""
    g, feeds, targets = lstm_training_graph(T, N, I, H, seed)
    for _ in range(3):
        out = g.run(feeds=feeds, targetTensors=targets)
    assert out[targets[2]].shape == (4 * H, H)


def gru_autodiff(seed: int, T: int = 12, N: int = 32, I: int = 192, H: int = 256) -> None:
    """Constant weights and Graph.gradients (its backward ops), float64."""
    rng = np.random.default_rng(seed)
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float64, name="x")
    R = g.constant(weights(rng, 3 * H, H).astype(np.float64))
    W = g.constant(weights(rng, 3 * H, I).astype(np.float64))
    (h,) = g.GRU(x, recurrentWeight=R, inputWeight=W,
                 descriptor=rg.GRUDescriptor(resetAfter=True))
    grads = g.gradients(of=h, with_=[x, R, W])
    feeds = {x: rng.standard_normal((T, N, I))}
    for _ in range(3):
        out = g.run(feeds=feeds, targetTensors=[h, *grads.values()])
    assert out[h].shape == (T, N, H)


def many_alive(seed: int) -> None:
    """Several graphs alive at once (constant weights, single-gate RNN, bidirectional),
    all run, then all dropped together."""
    rng = np.random.default_rng(seed)
    graphs = []
    for k in range(6):
        H, I, T, N = 128 + 32 * k, 128, 10, 32
        g = rg.Graph()
        x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
        R = (rng.standard_normal((2, H, H)) * 0.05).astype(np.float32)
        (h,) = g.singleGateRNN(x, recurrentWeight=R, inputWeight=weights(rng, 2 * H, I),
                               descriptor=rg.SingleGateRNNDescriptor(bidirectional=True))
        graphs.append((g, {x: rng.standard_normal((T, N, I)).astype(np.float32)}, h))
    outputs = [g.run(feeds=feeds, targetTensors=[h])[h] for g, feeds, h in graphs]
    assert all(o.shape[2] == 2 * (128 + 32 * k) for k, o in enumerate(outputs))


def core_packed(seed: int, I: int = 256, H: int = 256) -> None:
    """The compiled module directly: packed weights and outputs, dropped."""
    from rnngraph import _native

    core = _native.core
    rng = np.random.default_rng(seed)
    options = core.LSTMOptions()
    R, W = weights(rng, 4 * H, H), weights(rng, 4 * H, I)
    packed = core.pack_forward_weights(options, R, W)
    x = rng.standard_normal((16, 32, I)).astype(np.float32)
    for _ in range(3):
        h, _, z = core.rnn_forward(options, {"source": x, "recurrentWeight": R,
                                             "inputWeight": W}, training=True, packed=packed)
    assert h.shape == (16, 32, H) and z.shape == (16, 32, 4 * H)


def large_batch_step(seed: int, T: int = 2, N: int = 65536, I: int = 8, H: int = 128) -> None:
    """A training step over a batch of 65536 rows: its step products copy their rows of the
    state (32 MiB at H = 128) into a buffer each thread keeps, which must stay small."""
    rng = np.random.default_rng(seed)
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
    R, W = weights(rng, 4 * H, H), weights(rng, 4 * H, I)
    (h,) = g.LSTM(x, recurrentWeight=R, inputWeight=W)
    grads = g.gradients(of=h, with_=[x])
    out = g.run(feeds={x: rng.standard_normal((T, N, I)).astype(np.float32)},
                targetTensors=[h, *grads.values()])
    assert out[h].shape == (T, N, H)


def lstm_inference_no_gc(seed: int) -> None:
    """As lstm_inference, with the cyclic garbage collector off: a Graph must be freed by
    reference counting alone when its last reference goes."""
    gc.disable()
    try:
        lstm_inference(seed)
    finally:
        gc.enable()


# name: (scenario, builds, warm-up builds before the flatness reference point)
SCENARIOS = {"lstm_constant_weights": (lstm_inference, 20, WARM),
             "lstm_constant_weights_gc_off": (lstm_inference_no_gc, 20, WARM),
             "lstm_training_step": (lstm_training, 20, WARM),
             "gru_graph_gradients": (gru_autodiff, 12, WARM),
             "many_graphs_alive": (many_alive, 8, WARM),
             "core_packed_weights": (core_packed, 20, WARM),
             "large_batch_step": (large_batch_step, 2 * LARGE_BATCH_WARM, LARGE_BATCH_WARM)}


def main() -> None:
    names = sys.argv[1:] or list(SCENARIOS)
    tiny = rg.Graph()  # start the worker threads and the BLAS
    x = tiny.placeholder(shape=(2, 2, 3), name="x")
    (h,) = tiny.singleGateRNN(x, recurrentWeight=np.eye(4, dtype=np.float32),
                              inputWeight=np.ones((4, 3), np.float32))
    tiny.run(feeds={x: np.ones((2, 2, 3), np.float32)}, targetTensors=[h])
    np.random.default_rng(0).standard_normal(4)
    del tiny, x, h
    gc.collect()
    start = status_bytes("VmRSS")
    report: dict[str, dict[str, object]] = {}
    for name in names:
        scenario, builds, warm = SCENARIOS[name]
        series = []
        for build in range(builds):
            scenario(build)
            if not name.endswith("_gc_off"):
                gc.collect()
            series.append(status_bytes("VmRSS"))
        final = settle(start)
        report[name] = {
            "series_mib": [round(v / MIB, 1) for v in series],
            "growth_mib": round((max(series[warm:]) - series[warm - 1]) / MIB, 1),
            "final_mib": round(final / MIB, 1),
            "excess_mib": round((final - start) / MIB, 1),
        }
    print(json.dumps({"start_mib": round(start / MIB, 1), "back_within_mib": BACK_WITHIN_MIB,
                      "scenarios": report}), flush=True)


if __name__ == "__main__":
    main()
