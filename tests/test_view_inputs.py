"""A recurrent op reads its inputs in the SPEC.md section 1 layouts whatever made them: a view
op's result (a transpose, a slice: not C-contiguous), a placeholder given a state's
[1, N, D·H] layout or a peephole's [2, 4·H], a constant mask broadcast from [1, 1, D·H]. Each
gives the same results as the same values fed dense; the forward op also matches the NumPy
reference. (A run makes dense only the inputs that may need it: ops/layouts.py, unsettled.)"""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from reference import numpy_rnn

T, N, I, H, D = 3, 2, 5, 4, 2
DH = D * H
LSTM_GRADIENTS = ("source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
                  "initCell")  # LSTMGradients' return order (SPEC.md section 6)


def _inputs(rng):
    return {
        "source": rng.standard_normal((T, N, I)),
        "recurrentWeight": rng.standard_normal((2, 4 * H, H)) * 0.5,
        "inputWeight": rng.standard_normal((D * 4 * H, I)) * 0.5,
        "bias": rng.standard_normal(D * 4 * H) * 0.1,
        "initState": rng.standard_normal((N, DH)),
        "initCell": rng.standard_normal((N, DH)),
        "peephole": rng.standard_normal(D * 4 * H) * 0.1,
        "mask": (rng.random((1, 1, DH)) > 0.3).astype(np.float64),
        "sourceGradient": rng.standard_normal((T, N, DH)),
    }


def _dense_run(x, descriptor, gradient_labels):
    """Every input a placeholder in the layout the core takes, fed dense."""
    g = rg.Graph()
    shapes = {**{k: v.shape for k, v in x.items()}, "mask": (T, N, DH)}
    values = {**x, "mask": np.ascontiguousarray(np.broadcast_to(x["mask"], (T, N, DH)))}
    ph = {k: g.placeholder(shape=s, dataType=rg.float64, name=k) for k, s in shapes.items()}
    inputs = {k: v for k, v in ph.items() if k != "sourceGradient"}
    h, grads = _ops(g, descriptor, inputs, ph["sourceGradient"])
    out = g.run(feeds={ph[k]: v for k, v in values.items()}, targetTensors=[h, *grads])
    return out[h], dict(zip(gradient_labels, (out[t] for t in grads)))


def _view_run(x, descriptor, gradient_labels):
    """The same values through views, other layouts and a broadcast constant mask."""
    g = rg.Graph()
    # source: the transpose of a [N, T, I] placeholder; sourceGradient: a slice of a longer one
    source_nti = g.placeholder(shape=(N, T, I), dataType=rg.float64, name="source_nti")
    source = g.transpose(source_nti, permutation=[1, 0, 2])
    longer = g.placeholder(shape=(T + 2, N, DH), dataType=rg.float64, name="longer")
    source_gradient = g.sliceTensor(longer, dimension=0, start=1, length=T)
    # initState as [1, N, D·H]; initCell a transposed view of a [D·H, N] placeholder
    init_state = g.placeholder(shape=(1, N, DH), dataType=rg.float64, name="initState")
    cell_t = g.placeholder(shape=(DH, N), dataType=rg.float64, name="cell_t")
    init_cell = g.transpose(cell_t, permutation=[1, 0])
    # peephole as [2, 4·H]; mask a [1, 1, D·H] constant; the weights constants
    peephole = g.placeholder(shape=(2, 4 * H), dataType=rg.float64, name="peephole")
    inputs = {"source": source, "recurrentWeight": g.constant(x["recurrentWeight"]),
              "inputWeight": g.constant(x["inputWeight"]), "bias": g.constant(x["bias"]),
              "initState": init_state, "initCell": init_cell, "peephole": peephole,
              "mask": g.constant(x["mask"])}
    h, grads = _ops(g, descriptor, inputs, source_gradient)
    padded = np.zeros((T + 2, N, DH))
    padded[1:T + 1] = x["sourceGradient"]
    feeds = {source_nti: np.ascontiguousarray(x["source"].transpose(1, 0, 2)),
             longer: padded, init_state: x["initState"][None],
             cell_t: np.ascontiguousarray(x["initCell"].T),
             peephole: x["peephole"].reshape(2, 4 * H)}
    for _ in range(2):  # the second run takes the paths the first one settled
        out = g.run(feeds=feeds, targetTensors=[h, *grads])
    found = dict(zip(gradient_labels, (out[t] for t in grads)))
    if grads:
        found["initState"] = found["initState"].reshape(N, DH)
        found["peephole"] = found["peephole"].reshape(-1)
    return out[h], found


def _ops(g, descriptor, inputs, source_gradient):
    """The LSTM's h, and with training its gradient op's gradients (LSTM_GRADIENTS order)."""
    if not descriptor.training:
        (h,) = g.LSTM(descriptor=descriptor, **inputs)
        return h, []
    h, c, z = g.LSTM(descriptor=descriptor, **inputs)
    return h, g.LSTMGradients(sourceGradient=source_gradient, zState=z, cellOutputFwd=c,
                              descriptor=descriptor, **inputs)


@pytest.mark.parametrize("training", [False, True])
def test_view_inputs_give_the_dense_results(training):
    rng = np.random.default_rng(11)
    x = _inputs(rng)
    descriptor = rg.LSTMDescriptor(bidirectional=True, training=training)
    h_dense, grads_dense = _dense_run(x, descriptor, LSTM_GRADIENTS)
    h_view, grads_view = _view_run(x, descriptor, LSTM_GRADIENTS)
    np.testing.assert_array_equal(h_view, h_dense)
    assert len(grads_view) == (len(LSTM_GRADIENTS) if training else 0)
    for label in grads_view:
        np.testing.assert_array_equal(grads_view[label], grads_dense[label], err_msg=label)
    expected = numpy_rnn.lstm(x["source"], x["recurrentWeight"], x["inputWeight"], x["bias"],
                              x["initState"], x["initCell"],
                              np.broadcast_to(x["mask"], (T, N, DH)), x["peephole"],
                              bidirectional=True)["h"]
    np.testing.assert_allclose(h_view, expected, rtol=1e-12, atol=1e-12)
