"""Running the ops the way a user does (public ``rnngraph.Graph`` API) and the reference.

Every run checks the returned list against SPEC.md, not against the package's bookkeeping:
the forward op's outputs (section 5: count and order by the descriptor's training /
produceCell; shapes [T,N,D·H] and zState [T,N,D·G·H]) and the gradient op's gradients
(section 6: one per given input in ``spec.RETURNED`` order, each exactly its input's shape),
symbolic and actual shapes and the dtype of every result.

Two levels: ``forward`` / ``gradients`` / ``reference`` / ``loss`` / ``final`` take a
``Case``; the ``*_op`` functions below them take (cell, inputs, descriptor) for tests that
build their own descriptors.
"""

from __future__ import annotations

import contextlib

import numpy as np

import rnngraph as rg
from reference import numpy_rnn

from . import spec

REFERENCES = {"singleGateRNN": numpy_rnn.single_gate_rnn, "LSTM": numpy_rnn.lstm,
              "GRU": numpy_rnn.gru}


# --- on a Case --------------------------------------------------------------------------------

def forward(case, x: dict, **descriptor_overrides) -> dict:
    """The forward op of ``case`` (``training=True`` unless overridden): {name: array}."""
    return forward_op(case.cell, x, case.descriptor(**({"training": True}
                                                        | descriptor_overrides)))


def gradients(case, x: dict, signals, *, wired=True, forward_overrides=None,
              **descriptor_overrides) -> dict:
    """The gradient op of ``case`` after a training forward: {label: gradient} in SPEC
    order. ``wired``: both ops in one graph (else the saved tensors are fed as arrays);
    ``forward_overrides``: descriptor properties of the forward op (e.g. produceCell)."""
    return gradients_op(case.cell, x, case.descriptor(**descriptor_overrides), signals,
                        wired=wired, forward_overrides=forward_overrides)


def reference(case, x: dict, return_preactivations=False):
    """The NumPy reference of ``case`` (tests/reference/numpy_rnn.py)."""
    return reference_op(case.cell, x, case.descriptor(), return_preactivations)


def loss(case, signals, through="rnngraph"):
    """L(inputs) = Σ h·dy + Σ h_final·dS (+ Σ c_final·dC), through rnngraph or the reference."""
    return loss_op(case.cell, case.descriptor(), signals, through)


def final(sequence, case):
    """Each direction's final state, [N, D·H] (SPEC section 4)."""
    return final_op(sequence, case.descriptor())


@contextlib.contextmanager
def blas_threads(count: int):
    """Run the block with ``count`` rnngraph threads, then restore the previous count."""
    previous = rg.get_num_threads()
    rg.set_num_threads(count)
    try:
        yield
    finally:
        rg.set_num_threads(previous)


# --- on (cell, inputs, descriptor) ----------------------------------------------------------

def _dtype(x):
    return rg.float64 if x["source"].dtype == np.float64 else rg.float32


def _placeholders(g, arrays: dict, dtype) -> dict:
    return {k: g.placeholder(shape=v.shape, dataType=dtype, name=k) for k, v in arrays.items()}


def _sizes(cell, x, desc):
    T, N = x["source"].shape[:2]
    H = x["recurrentWeight"].shape[-1]
    D = 2 if desc.bidirectional else 1
    return {"h": (T, N, D * H), "c": (T, N, D * H), "zState": (T, N, D * spec.GATES[cell] * H)}


def forward_op(cell, x: dict, desc) -> dict:
    """The forward op on placeholders; checks the returned list; {name: array}."""
    g = rg.Graph()
    ph = _placeholders(g, x, _dtype(x))
    outputs = getattr(g, cell)(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                               descriptor=desc)
    names = spec.output_names(cell, desc.training, getattr(desc, "produceCell", False))
    result = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outputs)
    return _checked_outputs(cell, x, desc, names, outputs, result)


def _checked_outputs(cell, x, desc, names, outputs, result) -> dict:
    assert isinstance(outputs, list) and len(outputs) == len(names), (
        f"{cell} returned {len(outputs)} tensors; SPEC.md section 5 wants {list(names)}")
    shapes = _sizes(cell, x, desc)
    out = {}
    for name, tensor in zip(names, outputs):
        assert tensor.shape == shapes[name], f"{cell} {name}: symbolic shape {tensor.shape}"
        assert tensor.dataType == _dtype(x), f"{cell} {name}: symbolic dtype {tensor.dataType}"
        value = result[tensor]
        assert value.shape == shapes[name], f"{cell} {name}: shape {value.shape}"
        assert value.dtype == x["source"].dtype, f"{cell} {name}: dtype {value.dtype}"
        out[name] = value
    return out


def gradients_op(cell, x: dict, desc, signals, *, wired=True, forward_overrides=None) -> dict:
    """A training forward op and the gradient op (descriptor ``desc``); {label: gradient}."""
    train = desc.copy()
    train.training = True
    for key, value in (forward_overrides or {}).items():
        setattr(train, key, value)
    g = rg.Graph()
    dtype = _dtype(x)
    ph = _placeholders(g, x, dtype)
    inputs = {k: v for k, v in ph.items() if k != "source"}
    if wired:
        saved = getattr(g, cell)(ph["source"], **inputs, descriptor=train)
        saved = dict(zip(spec.output_names(cell, True), saved))
        saved_feeds = {}
    else:
        arrays = forward_op(cell, x, train)
        saved = _placeholders(g, arrays, dtype)
        saved_feeds = {saved[k]: v for k, v in arrays.items()}
    extra = {"zState": saved["zState"]}
    if cell == "LSTM":
        extra["cellOutputFwd"] = saved["c"]
    if cell == "GRU":
        extra["outputFwd"] = saved["h"]
    cotangents = {k: v for k, v in zip(("sourceGradient", "stateGradient", "cellGradient"),
                                       signals) if v is not None}
    signal_ph = _placeholders(g, cotangents, dtype)
    grads = getattr(g, spec.GRADIENT_OPS[cell])(ph["source"], **inputs, **extra, **signal_ph,
                                                 descriptor=desc)
    labels = [label for label in spec.RETURNED[cell] if label in x]
    op = spec.GRADIENT_OPS[cell]
    assert isinstance(grads, list) and len(grads) == len(labels), (
        f"{op} returned {len(grads)} gradients for inputs {sorted(x)}; SPEC.md section 6 "
        f"wants {labels}")
    feeds = ({ph[k]: v for k, v in x.items()} | saved_feeds
             | {signal_ph[k]: v for k, v in cotangents.items()})
    result = g.run(feeds=feeds, targetTensors=grads)
    out = {}
    for label, tensor in zip(labels, grads):
        assert tensor.shape == x[label].shape, f"{op} d{label}: symbolic shape {tensor.shape}"
        assert tensor.dataType == dtype, f"{op} d{label}: symbolic dtype {tensor.dataType}"
        value = result[tensor]
        assert value.shape == x[label].shape, f"{op} d{label}: shape {value.shape}"
        assert value.dtype == x["source"].dtype, f"{op} d{label}: dtype {value.dtype}"
        out[label] = value
    return out


def reference_options(desc) -> dict:
    """The reference's keyword options for a descriptor (activations by name)."""
    options = {}
    for key, value in desc.as_dict().items():
        if key not in ("training", "produceCell"):
            options[key] = spec.ACTIVATIONS[int(value)] if "ctivation" in key else value
    return options


def reference_op(cell, x: dict, desc, return_preactivations=False):
    arrays = dict(x)
    source = arrays.pop("source")
    return REFERENCES[cell](source, **arrays, **reference_options(desc),
                            return_preactivations=return_preactivations)


def final_op(sequence, desc):
    """Each direction's last processed step: [N, D·H] (SPEC section 4)."""
    if desc.bidirectional:
        H = sequence.shape[-1] // 2
        return np.concatenate([sequence[-1, :, :H], sequence[0, :, H:]], axis=1)
    return sequence[0] if desc.reverse else sequence[-1]


def loss_op(cell, desc, signals, through="rnngraph"):
    """L(inputs) = Σ h·dy + Σ h_final·dS (+ Σ c_final·dC) as a function of the input dict."""
    assert through in ("rnngraph", "reference"), through
    forward_desc = desc.copy()
    if cell == "LSTM":
        forward_desc.produceCell = True
    dy, dS, dC = (tuple(signals) + (None, None))[:3]

    def loss_value(x):
        if through == "reference":
            out = reference_op(cell, x, desc)
        else:
            out = forward_op(cell, x, forward_desc)
        total = float(np.sum(out["h"] * dy))
        if dS is not None:
            total += float(np.sum(final_op(out["h"], desc) * dS))
        if dC is not None:
            total += float(np.sum(final_op(out["c"], desc) * dC))
        return total

    return loss_value
