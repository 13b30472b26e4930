"""One allocation-failure case (run by test_alloc_failure_probe.py, one process per case).

    python3 probe_alloc_driver.py <headroom MiB> <warm|cold> <graph|core>

Makes an LSTM training step's inputs (T=32, N=64, I=H=512, float32: some 100 MiB of
outputs, workspace and packed weights), optionally runs it once ("warm": worker threads,
BLAS buffers and memory pools already there; "cold": none of them), then limits the
address space to its current size plus ``headroom`` MiB (RLIMIT_AS) and runs the step
again: it must either succeed or raise MemoryError naming the op. Then it raises the limit
back and runs the step twice more: both must succeed with the same bits (and the bits of the
warm run, when there was one).

Prints one JSON line: {"limited": "ok" | exception type, "message", "after": "ok" | error,
"same_bits": bool}. A process that dies instead (OpenBLAS calls exit(1) when it cannot map
its buffer) prints nothing: the test reads its exit status and stderr.
"""

from __future__ import annotations

import json
import resource
import sys

import numpy as np
from probe_process import status_bytes

import rnngraph as rg
from rnngraph import _native

T, N, I, H = 32, 64, 512, 512


def main() -> None:
    headroom, warmth, layer = int(sys.argv[1]) << 20, sys.argv[2], sys.argv[3]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, N, I)).astype(np.float32)
    R = (rng.standard_normal((4 * H, H)) * 0.05).astype(np.float32)
    W = (rng.standard_normal((4 * H, I)) * 0.05).astype(np.float32)
    dy = np.ones((T, N, H), np.float32)

    if layer == "graph":
        g = rg.Graph()
        px = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
        pdy = g.placeholder(shape=(T, N, H), dataType=rg.float32, name="dy")
        d = rg.LSTMDescriptor(training=True)
        h, c, z = g.LSTM(px, recurrentWeight=R, inputWeight=W, descriptor=d)  # constants
        grads = g.LSTMGradients(px, recurrentWeight=R, sourceGradient=pdy, zState=z,
                                cellOutputFwd=c, inputWeight=W, descriptor=d)
        targets = [h, *grads]

        def step() -> list[np.ndarray]:
            out = g.run(feeds={px: x, pdy: dy}, targetTensors=targets)
            return [out[t] for t in targets]
    else:
        core = _native.core
        options = core.LSTMOptions()

        def step() -> list[np.ndarray]:
            inputs = {"source": x, "recurrentWeight": R, "inputWeight": W}
            hh, cc, zz = core.rnn_forward(options, inputs, training=True)
            grads = core.rnn_gradients(options, {**inputs, "sourceGradient": dy,
                                                 "zState": zz, "cellOutputFwd": cc})
            return [hh, *grads.values()]

    reference = step() if warmth == "warm" else None
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (status_bytes("VmSize") + headroom, hard))
    report: dict[str, object] = {}
    try:
        step()
        report["limited"] = "ok"
    except BaseException as error:  # noqa: BLE001 - classified by the test
        report["limited"] = type(error).__name__
        report["message"] = str(error)[:300]
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    try:
        first, second = step(), step()
        report["after"] = "ok"
        report["same_bits"] = all(np.array_equal(a, b) for a, b in zip(first, second)) and (
            reference is None or all(np.array_equal(a, b) for a, b in zip(first, reference)))
        report["finite"] = all(np.isfinite(a).all() for a in first)
    except BaseException as error:  # noqa: BLE001 - reported
        report["after"] = f"{type(error).__name__}: {str(error)[:300]}"
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
