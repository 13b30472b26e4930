"""Wrong shapes and ranks never crash: every op (singleGateRNN, LSTM, GRU and their gradient
ops) refuses them with a ValueError that names the op and the Swift label (SPEC.md
section 7), at build time when the shape is known and at run time otherwise."""

from __future__ import annotations

import re

import numpy as np
import pytest

import rnngraph as rg
from toolkit import CELLS, GATES, GRADIENT_OPS
from toolkit.placeholders import SIZES, build, every_input, input_shapes, op_name
from toolkit.spec import output_names

T, N, I, H = (SIZES[k] for k in "TNIH")


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradients"])
@pytest.mark.parametrize("cell", CELLS)
def test_valid_shapes_build(cell, gradient, bidirectional):
    """The baseline of every error test below: with no override the op builds and returns
    exactly what SPEC.md says. The forward op: [h] (with training: SPEC section 5's list, h and
    c [T,N,D·H], zState [T,N,D·G·H]); the gradient op: one gradient per given input in section
    6's order, each of its input's shape. Every tensor is float32, as its inputs."""
    case = every_input(cell, "bi" if bidirectional else "fwd")
    shapes = input_shapes(case)
    if gradient:
        expected = {label: shapes[label] for label in case.returned}
        outputs = {"plain": build(case, gradient=True)}
    else:
        sizes = {"h": (T, N, case.DH), "c": (T, N, case.DH), "zState": (T, N, case.DH * case.G)}
        expected = {name: sizes[name] for name in output_names(cell, training=False)}
        training = {name: sizes[name] for name in output_names(cell, training=True)}
        outputs = {"plain": build(case),
                   "training": build(case, descriptor=case.descriptor(training=True))}
    for kind, tensors in outputs.items():
        wanted = list((training if kind == "training" else expected).values())
        assert isinstance(tensors, list), f"{kind}: {type(tensors)}"
        assert [t.shape for t in tensors] == wanted, f"{kind}: {tensors}"
        assert all(isinstance(t, rg.Tensor) and t.dataType == rg.float32 for t in tensors)


# ---------------------------------------------------------------------------------------
# Wrong shapes and ranks (build time)
# ---------------------------------------------------------------------------------------

# (cell, gradient op?, bidirectional?, overrides, label, fragments the message must hold)
WRONG_SHAPES = [
    ("LSTM", False, False, {"recurrentWeight": (3 * H, H)}, "recurrentWeight", ["[4H, H]"]),
    ("GRU", False, False, {"recurrentWeight": (4 * H, H)}, "recurrentWeight", ["[3H, H]"]),
    ("singleGateRNN", False, False, {"recurrentWeight": (H, H + 1)}, "recurrentWeight",
     ["[H, H]"]),
    ("LSTM", False, True, {"recurrentWeight": (2, 3 * H, H)}, "recurrentWeight",
     ["[2, 4H, H]"]),
    ("GRU", False, False, {"inputWeight": (3 * H, I + 1)}, "inputWeight", ["[3H, I]"]),
    ("singleGateRNN", False, True, {"inputWeight": (H, I)}, "inputWeight", ["[2H, I]"]),
    ("LSTM", False, False, {"bias": (3 * H,)}, "bias", ["[4H]"]),
    ("GRU", False, True, {"bias": (3 * H,)}, "bias", ["[6H]"]),
    ("singleGateRNN", False, False, {"initState": (N, H + 1)}, "initState", ["[N, H]"]),
    ("singleGateRNN", False, False, {"initState": (N + 1, H)}, "initState", ["[N, H]"]),
    ("LSTM", False, True, {"initCell": (N, H)}, "initCell", ["[N, 2H]"]),
    ("GRU", False, False, {"mask": (T, N, H + 1)}, "mask", ["broadcastable"]),
    ("singleGateRNN", False, False, {"mask": (T + 1, 1, 1)}, "mask", ["broadcastable"]),
    ("LSTM", False, False, {"peephole": (3 * H,)}, "peephole", ["[4H]"]),
    ("GRU", False, False, {"secondaryBias": (2 * H,)}, "secondaryBias", ["[H]"]),
    ("LSTM", False, False, {"inputWeight": None, "source": (T, N, 3 * H)}, "source",
     ["[T, N, 4H]"]),
    ("singleGateRNN", False, True, {"inputWeight": None, "source": (T, N, H)}, "source",
     ["[T, N, 2H]"]),
    ("singleGateRNN", True, False, {"sourceGradient": (T, N, H + 1)}, "sourceGradient",
     ["[T, N, H]"]),
    ("singleGateRNN", True, False, {"zState": (T + 1, N, H)}, "zState", ["[T, N, H]"]),
    ("LSTM", True, False, {"zState": (T, N, 3 * H)}, "zState", ["[T, N, 4H]"]),
    ("LSTM", True, False, {"cellOutputFwd": (T + 1, N, H)}, "cellOutputFwd", ["[T, N, H]"]),
    ("LSTM", True, False, {"cellGradient": (N, 2 * H)}, "cellGradient", ["[N, H]"]),
    ("LSTM", True, True, {"peephole": (4 * H,)}, "peephole", ["[8H]"]),
    ("GRU", True, True, {"outputFwd": (T, N, H)}, "outputFwd", ["[T, N, 2H]"]),
    ("GRU", True, False, {"stateGradient": (N + 1, H)}, "stateGradient", ["[N, H]"]),
    ("GRU", True, False, {"recurrentWeight": (H, H)}, "recurrentWeight", ["[3H, H]"]),
]


def _shape_id(row):
    cell, gradient, bidirectional, _, label, _ = row
    return f"{op_name(cell, gradient)}-{'bi' if bidirectional else 'uni'}-{label}"


@pytest.mark.parametrize("row", WRONG_SHAPES, ids=[_shape_id(r) for r in WRONG_SHAPES])
def test_wrong_shape_names_op_label_and_layout(row):
    cell, gradient, bidirectional, overrides, label, fragments = row
    case = every_input(cell, "bi" if bidirectional else "fwd")
    with pytest.raises(ValueError) as info:
        build(case, gradient, shapes=overrides)
    message = str(info.value)
    for fragment in [f"{op_name(cell, gradient)}:", label, *fragments]:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_lstm_recurrent_weight_message_is_the_documented_one():
    with pytest.raises(ValueError) as info:
        build(every_input("LSTM"), shapes={"recurrentWeight": (3 * H, H)})
    assert str(info.value).startswith(
        f"LSTM: recurrentWeight: expected shape [4H, H] = [{4 * H}, {H}], got [{3 * H}, {H}]")


WRONG_RANKS = [
    ("singleGateRNN", False, {"source": (T, N * I)}, "source"),
    ("LSTM", False, {"source": (1, T, N, I)}, "source"),
    ("GRU", False, {"recurrentWeight": (3 * H,)}, "recurrentWeight"),
    ("singleGateRNN", False, {"bias": (1, H)}, "bias"),
    ("LSTM", False, {"initState": (1, 1, N, H)}, "initState"),
    ("GRU", False, {"mask": (1, T, N, H)}, "mask"),
    ("LSTM", False, {"peephole": (4, H)}, "peephole"),
    ("singleGateRNN", True, {"zState": (T * N, H)}, "zState"),
    ("LSTM", True, {"sourceGradient": (T, N, H, 1)}, "sourceGradient"),
    ("GRU", True, {"stateGradient": (N * H,)}, "stateGradient"),
]


@pytest.mark.parametrize("cell,gradient,overrides,label", WRONG_RANKS,
                         ids=[f"{op_name(c, g)}-{lab}" for c, g, _, lab in WRONG_RANKS])
def test_wrong_rank_names_op_and_label(cell, gradient, overrides, label):
    with pytest.raises(ValueError, match=re.escape(f"{op_name(cell, gradient)}: {label}")):
        build(every_input(cell), gradient, shapes=overrides)


def test_zero_hidden_or_input_size_is_rejected():
    zero_h = "singleGateRNN: recurrentWeight: hidden size H must be positive"
    with pytest.raises(ValueError, match=zero_h):
        build(every_input("singleGateRNN"),
              shapes={"recurrentWeight": (0, 0), "inputWeight": (0, I), "bias": None,
                      "initState": None, "mask": None})
    # H = 0 is named where it comes from, not at the next label that disagrees with it
    for gradient in (False, True):
        with pytest.raises(ValueError, match=f"{op_name('singleGateRNN', gradient)}: "
                                             "recurrentWeight: hidden size H must be positive"):
            build(every_input("singleGateRNN"), gradient, shapes={"recurrentWeight": (0, 0)})
    with pytest.raises(ValueError, match="LSTM: source"):
        build(every_input("LSTM"), shapes={"source": (T, N, 0), "inputWeight": (4 * H, 0)})


@pytest.mark.parametrize("cell", CELLS)
def test_bidirectional_flag_must_match_shapes(cell):
    uni, bi = every_input(cell, "fwd"), every_input(cell, "bi")
    with pytest.raises(ValueError, match=re.escape(f"{cell}: recurrentWeight")):
        build(uni, shapes={"recurrentWeight": input_shapes(bi)["recurrentWeight"]})
    with pytest.raises(ValueError, match=re.escape(f"{cell}: recurrentWeight")):
        build(bi, shapes={"recurrentWeight": input_shapes(uni)["recurrentWeight"]})
    # Right R, but the other inputs in the unidirectional layout.
    for label in ("inputWeight", "initState"):
        with pytest.raises(ValueError, match=re.escape(f"{cell}: {label}")):
            build(bi, shapes={label: input_shapes(uni)[label]})


# ---------------------------------------------------------------------------------------
# Run-time shape errors (placeholders with unknown dimensions)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cell", CELLS)
def test_run_time_shape_errors_name_op_and_label(cell):
    G, gradient_op = GATES[cell], GRADIENT_OPS[cell]
    g = rg.Graph()
    x = g.placeholder(shape=(None, None, I), dataType=rg.float64, name="x")
    R = g.placeholder(shape=(None, None), dataType=rg.float64, name="R")
    W = g.placeholder(shape=(None, I), dataType=rg.float64, name="W")
    h0 = g.placeholder(shape=(None, None), dataType=rg.float64, name="h0")
    m = g.placeholder(shape=(None, None, None), dataType=rg.float64, name="m")
    desc = every_input(cell).descriptor(training=True)
    outputs = getattr(g, cell)(x, recurrentWeight=R, inputWeight=W, initState=h0, mask=m,
                               descriptor=desc)
    saved = dict(zip(output_names(cell, training=True), outputs))
    h = saved["h"]
    assert h.shape == (None, None, None)  # T, N and H are really unknown until run time
    dy = g.placeholder(shape=(None, None, None), dataType=rg.float64, name="dy")
    extra = {"LSTM": {"cellOutputFwd": saved.get("c")}, "GRU": {"outputFwd": h}}.get(cell, {})
    grads = getattr(g, gradient_op)(
        x, recurrentWeight=R, inputWeight=W, initState=h0, mask=m, sourceGradient=dy,
        zState=saved["zState"], **extra, descriptor=desc)
    good = {x: np.zeros((T, N, I)), R: np.zeros((G * H, H)), W: np.zeros((G * H, I)),
            h0: np.zeros((N, H)), m: np.ones((T, N, H)), dy: np.zeros((T, N, H))}
    assert g.run(feeds=good, targetTensors=[h])[h].shape == (T, N, H)
    out = g.run(feeds=good, targetTensors=grads)
    assert [out[t].shape for t in grads] == [(T, N, I), (G * H, H), (G * H, I), (N, H)]
    bad_feeds = [
        (R, np.zeros(((G + 1) * H, H)), cell, "recurrentWeight", h),
        (W, np.zeros(((G + 1) * H, I)), cell, "inputWeight", h),
        (h0, np.zeros((N + 1, H)), cell, "initState", h),
        (m, np.ones((T, N, H + 1)), cell, "mask", h),
        (dy, np.zeros((T + 1, N, H)), gradient_op, "sourceGradient", grads[0]),
        (dy, np.zeros((T, N, H + 1)), gradient_op, "sourceGradient", grads[0]),
    ]
    for placeholder, value, op, label, target in bad_feeds:
        with pytest.raises(ValueError, match=re.escape(f"{op}: {label}")):
            g.run(feeds=good | {placeholder: value}, targetTensors=[target])
