"""Helpers shared by the LSTM test files (test_lstm_*.py).

* ``stable_rng``: a generator seeded from the test id with CRC-32, so the data of a test is
  the same in every run (``hash()`` of a str is salted per process).
* ``make_inputs``: random LSTM inputs in any SPEC.md section-1 layout (``[1,N,DH]`` states,
  ``[2,4H]`` / ``[8H]`` peepholes, broadcast masks, no W, no bias, ...).
* ``draw_inputs``: ``make_inputs`` redrawn until every pre-activation that reaches a relu or
  hardSigmoid is at least ``KINK_MARGIN`` away from a kink (0; ±2.5), so that central
  differences are valid, and until relu sees both signs (so both branches are exercised).
* ``run_forward`` / ``run_gradients``: the forward op and the gradient op through the public
  Graph API, in one graph, with the returned-list count, order and shapes checked against
  SPEC.md sections 5 and 6 independently of the package's own bookkeeping.
"""

from __future__ import annotations

import contextlib
import zlib

import numpy as np

import harness
import rnngraph as rg
from reference import numpy_rnn

SLOTS = ("inputGateActivation", "forgetGateActivation", "cellGateActivation",
         "outputGateActivation", "activation")
ACTIVATIONS = ("none", "relu", "tanh", "sigmoid", "hardSigmoid")
# SPEC.md section 6: LSTMGradients returns, in this order, one per given input.
RETURNED = ("source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
            "initCell")
DIFFERENTIABLE = RETURNED
# Where the piecewise-linear activations are not differentiable (SPEC.md section 2).
KINKS = {"relu": (0.0,), "hardSigmoid": (-2.5, 2.5)}
# FD moves every input by eps = 1e-6; a pre-activation then moves by well under 1e-4 for the
# tiny, O(1) inputs used here, so a 1e-3 margin keeps both FD points on one side of a kink.
KINK_MARGIN = 1e-3


def stable_rng(nodeid: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(nodeid.encode()))


def num_directions(desc) -> int:
    return 2 if desc.bidirectional else 1


def make_inputs(rng, *, bidirectional=False, T=3, N=2, I=3, H=2, inputWeight=True, bias=True,
                initState="[N,DH]", initCell="[N,DH]", mask=None, peephole=None, scale=0.6,
                dtype=np.float64):
    """Random LSTM inputs. Layout strings (None: input absent):
    initState/initCell ``[N,DH]`` or ``[1,N,DH]``; peephole ``[D4H]`` or ``[2,4H]`` (bi);
    mask any of ``[T,N,DH]``, ``[T,N,1]``, ``[T,1,DH]``, ``[N,DH]``, ``[T,1,1]`` (binary,
    holding both 0 and 1) or ``fractional[T,N,DH]`` (values in (0, 1))."""
    D = 2 if bidirectional else 1
    sizes = {"T": T, "N": N, "DH": D * H, "1": 1}
    x = harness.make_inputs("LSTM", rng, T=T, N=N, I=I, H=H, bidirectional=bidirectional,
                            inputWeight=inputWeight, bias=bias, initState=initState is not None,
                            initCell=initCell is not None, peephole=peephole is not None,
                            dtype=dtype, scale=scale)
    for label, layout in (("initState", initState), ("initCell", initCell)):
        if layout is not None:
            x[label] = x[label].reshape([sizes[s] for s in layout.strip("[]").split(",")])
    if peephole == "[2,4H]":
        x["peephole"] = x["peephole"].reshape(2, 4 * H)
    if mask is not None:
        fractional = mask.startswith("fractional")
        shape = [sizes[s] for s in mask.removeprefix("fractional").strip("[]").split(",")]
        if fractional:
            m = rng.uniform(0.1, 0.9, shape)
        else:
            m = (rng.random(shape) > 0.4).astype(float)
            m.flat[0], m.flat[-1] = 0.0, 1.0  # both values present, whatever the draw
        x["mask"] = m.astype(dtype)
    return x


@contextlib.contextmanager
def _recording_activations(record: list):
    """Temporarily wrap the reference's activation to record (name, pre-activation)."""
    original = numpy_rnn._apply

    def recording(name, value):
        record.append((name, np.array(value, dtype=np.float64)))
        return original(name, value)

    numpy_rnn._apply = recording
    try:
        yield
    finally:
        numpy_rnn._apply = original


def preactivations(x: dict, desc) -> dict:
    """{activation name: every value the reference passes to it, flattened}."""
    record = []
    with _recording_activations(record):
        harness.reference_forward("LSTM", x, desc)
    out = {}
    for name, value in record:
        out.setdefault(name, []).append(value.ravel())
    return {name: np.concatenate(values) for name, values in out.items()}


def kink_distance(pre: dict) -> float:
    distance = np.inf
    for name, kinks in KINKS.items():
        if name in pre:
            for kink in kinks:
                distance = min(distance, float(np.min(np.abs(pre[name] - kink))))
    return distance


def draw_inputs(rng, desc, accept=None, attempts=50, **kwargs):
    """``make_inputs`` redrawn until the data are FD-safe (see module docstring) and
    ``accept(preactivations)`` holds. Deterministic for a given generator."""
    for _ in range(attempts):
        x = make_inputs(rng, bidirectional=desc.bidirectional, **kwargs)
        pre = preactivations(x, desc)
        if kink_distance(pre) < KINK_MARGIN:
            continue
        if "relu" in pre and not (np.any(pre["relu"] < 0) and np.any(pre["relu"] > 0)):
            continue
        if accept is not None and not accept(pre):
            continue
        return x
    raise AssertionError(f"no FD-safe inputs in {attempts} draws for {desc!r}, {kwargs}")


def _placeholders(g, arrays: dict) -> dict:
    dtype = rg.float64 if arrays["source"].dtype == np.float64 else rg.float32
    return {k: g.placeholder(shape=v.shape, dataType=dtype, name=k) for k, v in arrays.items()}


def expected_output_names(desc) -> list:
    """SPEC.md section 5 (pinned): [h]; produceCell [h, c]; training [h, c, zState]."""
    if desc.training:
        return ["h", "c", "zState"]
    return ["h", "c"] if desc.produceCell else ["h"]


def run_forward(x: dict, desc) -> dict:
    """LSTM through the Graph API; checks the output count, symbolic and actual shapes and
    dtypes; returns {'h', 'c', 'zState'} for the outputs returned."""
    g = rg.Graph()
    ph = _placeholders(g, x)
    source = ph.pop("source")
    outputs = g.LSTM(source, **ph, descriptor=desc)
    names = expected_output_names(desc)
    assert isinstance(outputs, list) and len(outputs) == len(names), (
        f"LSTM with training={desc.training}, produceCell={desc.produceCell} returned "
        f"{len(outputs)} tensors, SPEC.md pins {names}")
    T, N = x["source"].shape[:2]
    H = x["recurrentWeight"].shape[-1]
    D = num_directions(desc)
    shapes = {"h": (T, N, D * H), "c": (T, N, D * H), "zState": (T, N, D * 4 * H)}
    feeds = {source: x["source"], **{ph[k]: v for k, v in x.items() if k != "source"}}
    result = g.run(feeds=feeds, targetTensors=outputs)
    out = {}
    for name, tensor in zip(names, outputs):
        assert tensor.shape == shapes[name], f"{name}: symbolic shape {tensor.shape}"
        value = result[tensor]
        assert value.shape == shapes[name], f"{name}: shape {value.shape} != {shapes[name]}"
        assert value.dtype == x["source"].dtype, f"{name}: dtype {value.dtype}"
        out[name] = value
    return out


def run_gradients(x: dict, desc, sourceGradient, stateGradient=None, cellGradient=None, *,
                  forward_produceCell=False, gradient_training=None,
                  gradient_produceCell=None) -> dict:
    """A training LSTM feeding LSTMGradients in one graph, the way a user wires them.
    ``gradient_training`` / ``gradient_produceCell`` set those (irrelevant, SPEC.md section
    6) flags on the gradient op's descriptor. Checks the returned list: one gradient per
    given differentiable input, in SPEC.md order, each with exactly its input's shape."""
    g = rg.Graph()
    ph = _placeholders(g, x)
    forward_desc = desc.copy()
    forward_desc.training = True
    forward_desc.produceCell = forward_produceCell
    inputs = {k: v for k, v in ph.items() if k != "source"}
    h, c, zState = g.LSTM(ph["source"], **inputs, descriptor=forward_desc)
    extra = {"sourceGradient": sourceGradient}
    if stateGradient is not None:
        extra["stateGradient"] = stateGradient
    if cellGradient is not None:
        extra["cellGradient"] = cellGradient
    extra_ph = _placeholders(g, {"source": x["source"], **extra})
    extra_ph.pop("source")
    gradient_desc = desc.copy()
    if gradient_training is not None:
        gradient_desc.training = gradient_training
    if gradient_produceCell is not None:
        gradient_desc.produceCell = gradient_produceCell
    grads = g.LSTMGradients(ph["source"], **inputs, **extra_ph, zState=zState, cellOutputFwd=c,
                            descriptor=gradient_desc)
    expected = [label for label in RETURNED if label in x]
    assert isinstance(grads, list) and len(grads) == len(expected), (
        f"LSTMGradients returned {len(grads)} gradients for inputs {sorted(x)}; "
        f"SPEC.md section 6 wants {expected}")
    for label, tensor in zip(expected, grads):
        assert tensor.shape == x[label].shape, (
            f"d{label}: symbolic shape {tensor.shape} != input shape {x[label].shape}")
    feeds = {ph[k]: v for k, v in x.items()} | {extra_ph[k]: v for k, v in extra.items()}
    result = g.run(feeds=feeds, targetTensors=grads)
    out = {}
    for label, tensor in zip(expected, grads):
        value = result[tensor]
        assert value.shape == x[label].shape, (
            f"d{label}: shape {value.shape} != input shape {x[label].shape}")
        assert value.dtype == x["source"].dtype, f"d{label}: dtype {value.dtype}"
        assert np.all(np.isfinite(value)), f"d{label} is not finite"
        out[label] = value
    return out


def cotangents(rng, x: dict, desc, signal: str):
    """(sourceGradient, stateGradient, cellGradient) for a signal spelled like 'dy+dS+dC':
    a missing 'dy' means a zero sourceGradient, a missing 'dS'/'dC' means None."""
    T, N = x["source"].shape[:2]
    DH = num_directions(desc) * x["recurrentWeight"].shape[-1]
    dtype = x["source"].dtype
    parts = signal.split("+")
    dy = rng.standard_normal((T, N, DH)) if "dy" in parts else np.zeros((T, N, DH))
    dS = rng.standard_normal((N, DH)) if "dS" in parts else None
    dC = rng.standard_normal((N, DH)) if "dC" in parts else None
    cast = lambda a: None if a is None else a.astype(dtype)  # noqa: E731
    return cast(dy), cast(dS), cast(dC)


def max_abs_diff(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
