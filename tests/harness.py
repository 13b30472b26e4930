"""Running the ops through the public Graph API, the way a user does, for the tests.

Inputs travel as dicts keyed by Swift label (``source``, ``recurrentWeight``, ...).
"""

from __future__ import annotations

import numpy as np

import rnngraph as rg
from reference import numpy_rnn

GATES = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}
DESCRIPTORS = {
    "singleGateRNN": rg.SingleGateRNNDescriptor,
    "LSTM": rg.LSTMDescriptor,
    "GRU": rg.GRUDescriptor,
}
GRADIENT_OPS = {"singleGateRNN": "singleGateRNNGradients", "LSTM": "LSTMGradients", "GRU": "GRUGradients"}
REFERENCES = {"singleGateRNN": numpy_rnn.single_gate_rnn, "LSTM": numpy_rnn.lstm, "GRU": numpy_rnn.gru}


def make_inputs(cell, rng, *, T=3, N=2, I=3, H=2, bidirectional=False, inputWeight=True,
                bias=True, initState=True, initCell=True, mask=False, peephole=False,
                secondaryBias=False, dtype=np.float64, scale=0.6):
    """Random inputs in SPEC.md layouts; optional ones only where the cell has them."""
    G, D = GATES[cell], 2 if bidirectional else 1
    normal = lambda *shape: (scale * rng.standard_normal(shape)).astype(dtype)  # noqa: E731
    x = {"source": normal(T, N, I if inputWeight else D * G * H)}
    x["recurrentWeight"] = normal(2, G * H, H) if bidirectional else normal(G * H, H)
    if inputWeight:
        x["inputWeight"] = normal(D * G * H, I)
    if bias:
        x["bias"] = normal(D * G * H)
    if initState:
        x["initState"] = normal(N, D * H)
    if initCell and cell == "LSTM":
        x["initCell"] = normal(N, D * H)
    if mask:
        x["mask"] = (rng.random((T, N, D * H)) > 0.3).astype(dtype)
    if peephole and cell == "LSTM":
        x["peephole"] = normal(D * 4 * H)
    if secondaryBias and cell == "GRU":
        x["secondaryBias"] = normal(D * H)
    return x


def descriptor(cell, **properties):
    return DESCRIPTORS[cell](**properties)


def _dtype(arrays):
    return rg.float64 if arrays["source"].dtype == np.float64 else rg.float32


def _placeholders(g, arrays):
    dtype = _dtype(arrays)
    return {k: g.placeholder(shape=v.shape, dataType=dtype, name=k) for k, v in arrays.items()}


def forward(cell, arrays, desc):
    """Run the forward op; returns {'h', 'c', 'zState'} for the outputs it returns."""
    g = rg.Graph()
    ph = _placeholders(g, arrays)
    source = ph.pop("source")
    outputs = getattr(g, cell)(source, **ph, descriptor=desc)
    names = ["h", "c", "zState"] if cell == "LSTM" else ["h", "zState"]
    if cell == "LSTM" and not desc.training:
        names = ["h", "c"] if desc.produceCell else ["h"]
    ph["source"] = source
    result = g.run(feeds={ph[k]: v for k, v in arrays.items()}, targetTensors=outputs)
    return {name: result[t] for name, t in zip(names, outputs)}


def gradients(cell, arrays, desc, sourceGradient, stateGradient=None, cellGradient=None):
    """Forward with training, then the gradient op; returns {label: gradient}."""
    train = desc.copy()
    train.training = True
    saved = forward(cell, arrays, train)
    g = rg.Graph()
    ph = _placeholders(g, arrays)
    extra = {"sourceGradient": sourceGradient, "zState": saved["zState"]}
    if cell == "LSTM":
        extra["cellOutputFwd"] = saved["c"]
    if cell == "GRU":
        extra["outputFwd"] = saved["h"]
    if stateGradient is not None:
        extra["stateGradient"] = stateGradient
    if cellGradient is not None:
        extra["cellGradient"] = cellGradient
    ph.update(_placeholders(g, {**extra, "source": arrays["source"]}) | {"source": ph["source"]})
    feeds = {ph[k]: v for k, v in {**arrays, **extra}.items()}
    source = ph["source"]
    kwargs = {k: v for k, v in ph.items() if k != "source"}
    grads = getattr(g, GRADIENT_OPS[cell])(source, **kwargs, descriptor=desc)
    result = g.run(feeds=feeds, targetTensors=grads)
    returned = grads[0].op.attrs["returned"] if grads else []
    return {label: result[t] for label, t in zip(returned, grads)}


def final(sequence, desc, H):
    """Each direction's last processed step: [N, D·H] (SPEC.md section 4)."""
    if desc.bidirectional:
        return np.concatenate([sequence[-1, :, :H], sequence[0, :, H:]], axis=1)
    return sequence[0] if desc.reverse else sequence[-1]


def reference_options(desc):
    """The reference's keyword options for a descriptor (activations by name)."""
    options = {}
    for key, value in desc.as_dict().items():
        if key in ("training", "produceCell"):
            continue
        options[key] = rg.RNNActivation(value).name if "ctivation" in key else value
    return options


def reference_forward(cell, arrays, desc):
    x = dict(arrays)
    source = x.pop("source")
    return REFERENCES[cell](source, **x, **reference_options(desc))


def loss_function(cell, desc, H, sourceGradient, stateGradient=None, cellGradient=None,
                  use_reference=False):
    """L(inputs) = Σ h·dy + Σ h_final·dS (+ Σ c_final·dC), through rnngraph or the reference."""
    forward_desc = desc.copy()
    if cell == "LSTM":
        forward_desc.produceCell = True

    def loss(arrays):
        out = reference_forward(cell, arrays, desc) if use_reference else forward(cell, arrays, forward_desc)
        total = float(np.sum(out["h"] * sourceGradient))
        if stateGradient is not None:
            total += float(np.sum(final(out["h"], desc, H) * stateGradient))
        if cellGradient is not None:
            total += float(np.sum(final(out["c"], desc, H) * cellGradient))
        return total

    return loss
