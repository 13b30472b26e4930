"""rnngraph's step for a row: the graph is built and the feeds are made here, outside timing.

Each step is the graph compiled once (Graph.compile) and run (Executable.run); make_step's
``call="Graph.run"`` times Graph.run with its feed dict instead.
infer: one run of the forward op with training=False, target = the output sequence h. The
weights and bias are graph constants, as they are ONNX Runtime initializers and PyTorch module
parameters: rnngraph packs constant weights once, at the first (untimed) run.
train: one Graph holding the forward op (training=True) and its gradient op; one g.run with
every gradient as target (source, recurrentWeight, inputWeight, bias, initState, plus
initCell for LSTM and secondaryBias for GRU resetAfter, i.e. everything PyTorch returns)
computes forward + backward: the saved forward tensors are intermediates of that run.
move_thresholds sets the parallel sites' thresholds a measurement runs with.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from rows import GATES, Row

import rnngraph as rg
from rnngraph._native import core


def move_thresholds(setting: Mapping[str, str | int]) -> None:
    """Every parallel site's threshold (cpp/src/tuning.hpp) at its default but those
    ``setting`` moves ({site: multiply-adds}, e.g. {"team": 262144}); {} restores them all.
    ValueError for a site the core does not have or a value that is not an integer."""
    for site, _ in core._parallel_thresholds():
        core._set_parallel_threshold(site, -1)
    for site, value in setting.items():
        core._set_parallel_threshold(site, int(value))


def _random(rng, shape, dtype, scale=1.0):
    return rng.standard_normal(shape, dtype=dtype) * dtype(scale)


def row_values(row: Row, seed: int = 0) -> dict:
    """The row's inputs by Swift label, in SPEC.md's layouts: standard normal for the source
    and sourceGradient, scaled by 1/sqrt(H) for the weights and states."""
    T, N, I, H, G = row.T, row.N, row.I, row.H, GATES[row.cell]
    D = 2 if row.bidirectional else 1
    rng = np.random.default_rng(seed)
    s = 1.0 / np.sqrt(H)
    shapes = {
        "source": (T, N, I),
        "recurrentWeight": (2, G * H, H) if row.bidirectional else (G * H, H),
        "inputWeight": (D * G * H, I),
        "bias": (D * G * H,),
        "initState": (N, D * H),
    }
    if row.cell == "LSTM":
        shapes["initCell"] = (N, D * H)
    if row.cell == "GRU" and row.resetAfter:
        shapes["secondaryBias"] = (D * H,)
    if row.mode == "train":
        shapes["sourceGradient"] = (T, N, D * H)
    dtype = np.dtype(row.dtype).type
    return {k: _random(rng, v, dtype, 1.0 if k in ("source", "sourceGradient") else s)
            for k, v in shapes.items()}


def row_graph(row: Row, values: dict) -> tuple:
    """(graph, feeds, targets) of the row's step on ``values`` (row_values): infer targets
    the forward op's outputs (h, and c for the LSTM), train every gradient."""
    train = row.mode == "train"
    g = rg.Graph()
    constant = () if train else ("recurrentWeight", "inputWeight", "bias")
    data_type = rg.float64 if row.dtype == "float64" else rg.float32
    ph = {k: g.constant(v, name=k) if k in constant
          else g.placeholder(shape=v.shape, dataType=data_type, name=k) for k, v in values.items()}
    feeds = {ph[k]: v for k, v in values.items() if k not in constant}
    inputs = {k: t for k, t in ph.items() if k != "sourceGradient"}

    if row.cell == "LSTM":
        d = rg.LSTMDescriptor(bidirectional=row.bidirectional, training=train)
        outs = g.LSTM(descriptor=d, **inputs)
        if train:
            h, c, z = outs
            targets = g.LSTMGradients(sourceGradient=ph["sourceGradient"], zState=z,
                                      cellOutputFwd=c, descriptor=d, **inputs)
    elif row.cell == "GRU":
        d = rg.GRUDescriptor(bidirectional=row.bidirectional, training=train,
                             resetAfter=row.resetAfter)
        outs = g.GRU(descriptor=d, **inputs)
        if train:
            h, z = outs
            targets = g.GRUGradients(sourceGradient=ph["sourceGradient"], zState=z,
                                     outputFwd=h, descriptor=d, **inputs)
    else:
        d = rg.SingleGateRNNDescriptor(bidirectional=row.bidirectional, training=train,
                                       activation=rg.RNNActivation.tanh)
        outs = g.singleGateRNN(descriptor=d, **inputs)
        if train:
            h, z = outs
            targets = g.singleGateRNNGradients(sourceGradient=ph["sourceGradient"], zState=z,
                                               descriptor=d, **inputs)
    if not train:
        targets = list(outs)
    return g, feeds, targets


CALLS = ("Executable.run", "Graph.run")


def make_step(row: Row, seed: int = 0, call: str = "Executable.run"):
    """Return ``step()``: one timed rnngraph call for ``row`` (infer: the output sequence h
    only, as the peers return it). ``call``: the step compiled once (``Graph.compile``, the
    call for a step run many times, as an ONNX Runtime session is), or ``Graph.run`` with
    its feed dict each call."""
    g, feeds, targets = row_graph(row, row_values(row, seed))
    if row.mode != "train":
        targets = targets[:1]
    if call == "Graph.run":
        def step():
            return g.run(feeds=feeds, targetTensors=targets)
    elif call == "Executable.run":
        executable, inputs = g.compile(feeds=list(feeds), targetTensors=targets), list(feeds.values())

        def step():
            return executable.run(inputs)
    else:
        raise ValueError(f"call: one of {CALLS}, got {call!r}")
    return step
