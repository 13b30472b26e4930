"""Bad input never crashes: every op (singleGateRNN, LSTM, GRU and their gradient ops) rejects
wrong shapes, ranks, dtypes, descriptors and missing inputs with a ValueError/TypeError that
names the op and the Swift label (DESIGN.md section 5), at build time when the shape is known
and at run time otherwise; the private core rejects bad arrays the same way. Then the edge
values: NaN propagation, empty T and N, T = 1 and N = 1."""

from __future__ import annotations

import importlib
import importlib.util
import re
import zlib

import numpy as np
import pytest

import gradcheck
import harness
import rnngraph as rg
from rnngraph import _core

# The compiled modules to call directly: the baseline ``_core`` and, where the package picks
# a CPU-specific build at import (rnngraph._native), that one too.
CORES = {"_core": _core}
if importlib.util.find_spec("rnngraph._native") is not None:
    _active = importlib.import_module("rnngraph._native").core
    if _active is not _core:
        CORES["active-core"] = _active

T, N, I, H = 3, 2, 3, 4
CELLS = ("singleGateRNN", "LSTM", "GRU")
GATES = harness.GATES
DESCRIPTORS = harness.DESCRIPTORS


def seeded(text: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(text.encode()))


def shapes_for(cell, gradient=False, bidirectional=False):
    """Valid shapes of every input of the op (SPEC.md section 1)."""
    G, D = GATES[cell], 2 if bidirectional else 1
    shapes = {"source": (T, N, I),
              "recurrentWeight": (2, G * H, H) if bidirectional else (G * H, H),
              "inputWeight": (D * G * H, I), "bias": (D * G * H,), "initState": (N, D * H),
              "mask": (T, N, D * H)}
    if cell == "LSTM":
        shapes |= {"initCell": (N, D * H), "peephole": (D * 4 * H,)}
    if cell == "GRU":
        shapes["secondaryBias"] = (D * H,)
    if gradient:
        shapes |= {"sourceGradient": (T, N, D * H), "zState": (T, N, D * G * H),
                   "stateGradient": (N, D * H)}
        if cell == "LSTM":
            shapes |= {"cellOutputFwd": (T, N, D * H), "cellGradient": (N, D * H)}
        if cell == "GRU":
            shapes["outputFwd"] = (T, N, D * H)
    return shapes


def build(cell, gradient=False, bidirectional=False, shapes=None, dtypes=None, descriptor="default"):
    """Build the op on float32 placeholders; ``shapes`` overrides (None: pass None),
    ``dtypes`` gives some labels float64."""
    all_shapes = shapes_for(cell, gradient, bidirectional) | (shapes or {})
    dtypes = dtypes or {}
    g = rg.Graph()
    ph = {label: None if shape is None else
          g.placeholder(shape=shape, dataType=dtypes.get(label, rg.float32), name=label)
          for label, shape in all_shapes.items()}  # None passed explicitly (= omitted)
    if descriptor == "default":
        descriptor = DESCRIPTORS[cell](bidirectional=bidirectional)
    op = getattr(g, harness.GRADIENT_OPS[cell] if gradient else cell)
    source = ph.pop("source")
    return op(source, **ph, descriptor=descriptor)


def op_name(cell, gradient):
    return harness.GRADIENT_OPS[cell] if gradient else cell


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradients"])
@pytest.mark.parametrize("cell", CELLS)
def test_valid_shapes_build(cell, gradient, bidirectional):
    """The baseline of every error test below: with no override the op builds."""
    outputs = build(cell, gradient, bidirectional)
    assert isinstance(outputs, list) and len(outputs) >= 1


# ---------------------------------------------------------------------------------------
# Wrong shapes and ranks (build time)
# ---------------------------------------------------------------------------------------

# (cell, gradient op?, bidirectional?, overrides, label, fragments the message must hold)
WRONG_SHAPES = [
    ("LSTM", False, False, {"recurrentWeight": (3 * H, H)}, "recurrentWeight", ["[4H, H]"]),
    ("GRU", False, False, {"recurrentWeight": (4 * H, H)}, "recurrentWeight", ["[3H, H]"]),
    ("singleGateRNN", False, False, {"recurrentWeight": (H, H + 1)}, "recurrentWeight", ["[H, H]"]),
    ("LSTM", False, True, {"recurrentWeight": (2, 3 * H, H)}, "recurrentWeight", ["[2, 4H, H]"]),
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
    ("LSTM", False, False, {"inputWeight": None, "source": (T, N, 3 * H)}, "source", ["[T, N, 4H]"]),
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


def _shape_id(case):
    cell, gradient, bidirectional, _, label, _ = case
    return f"{op_name(cell, gradient)}-{'bi' if bidirectional else 'uni'}-{label}"


@pytest.mark.parametrize("case", WRONG_SHAPES, ids=[_shape_id(c) for c in WRONG_SHAPES])
def test_wrong_shape_names_op_label_and_layout(case):
    cell, gradient, bidirectional, overrides, label, fragments = case
    with pytest.raises(ValueError) as info:
        build(cell, gradient, bidirectional, shapes=overrides)
    message = str(info.value)
    for fragment in [f"{op_name(cell, gradient)}:", label, *fragments]:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_lstm_recurrent_weight_message_is_the_documented_one():
    with pytest.raises(ValueError) as info:
        build("LSTM", shapes={"recurrentWeight": (3 * H, H)})
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
        build(cell, gradient, shapes=overrides)


def test_zero_hidden_or_input_size_is_rejected():
    with pytest.raises(ValueError, match="singleGateRNN: recurrentWeight"):
        build("singleGateRNN", shapes={"recurrentWeight": (0, 0), "inputWeight": (0, I),
                                       "bias": None, "initState": None, "mask": None})
    with pytest.raises(ValueError, match="LSTM: source"):
        build("LSTM", shapes={"source": (T, N, 0), "inputWeight": (4 * H, 0)})


# ---------------------------------------------------------------------------------------
# Mixed dtypes, wrong types, missing inputs, descriptors
# ---------------------------------------------------------------------------------------

MIXED = [("singleGateRNN", False, "recurrentWeight"), ("singleGateRNN", True, "sourceGradient"),
         ("LSTM", False, "peephole"), ("LSTM", False, "initCell"), ("LSTM", True, "cellOutputFwd"),
         ("LSTM", True, "cellGradient"), ("GRU", False, "secondaryBias"), ("GRU", False, "mask"),
         ("GRU", True, "outputFwd"), ("GRU", True, "zState")]


@pytest.mark.parametrize("cell,gradient,label", MIXED,
                         ids=[f"{op_name(c, g)}-{lab}" for c, g, lab in MIXED])
def test_mixed_dtypes_name_the_label(cell, gradient, label):
    with pytest.raises(TypeError, match=re.escape(f"{op_name(cell, gradient)}: {label}")):
        build(cell, gradient, dtypes={label: rg.float64})


@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradients"])
@pytest.mark.parametrize("cell", CELLS)
def test_wrong_descriptor_type(cell, gradient):
    others = [d for c, d in DESCRIPTORS.items() if c != cell]
    for wrong in [others[0](), others[1](), {"bidirectional": False}, "tanh"]:
        with pytest.raises(TypeError, match=re.escape(f"{op_name(cell, gradient)}: descriptor")):
            build(cell, gradient, descriptor=wrong)


@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradients"])
@pytest.mark.parametrize("cell", CELLS)
def test_missing_required_inputs(cell, gradient):
    op = op_name(cell, gradient)
    required = ["recurrentWeight"]
    if gradient:
        required += ["sourceGradient", "zState"]
        required += {"LSTM": ["cellOutputFwd"], "GRU": ["outputFwd"]}.get(cell, [])
    for label in required:
        with pytest.raises(ValueError, match=re.escape(f"{op}: {label}")):
            build(cell, gradient, shapes={label: None})
    with pytest.raises(TypeError, match=re.escape(f"{op}: source")):
        build(cell, gradient, shapes={"source": None})
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
    with pytest.raises(TypeError):  # the keyword itself omitted: Python's own TypeError
        getattr(g, op)(x)


@pytest.mark.parametrize("cell", CELLS)
def test_inputs_of_the_wrong_kind(cell):
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
    R = g.placeholder(shape=shapes_for(cell)["recurrentWeight"], dataType=rg.float32, name="R")
    for bad in ([[1.0]], "R", 3.0):
        with pytest.raises(TypeError, match=re.escape(f"{cell}: recurrentWeight")):
            getattr(g, cell)(x, recurrentWeight=bad)
        with pytest.raises(TypeError, match=re.escape(f"{cell}: bias")):
            getattr(g, cell)(x, recurrentWeight=R, bias=bad)
    with pytest.raises(TypeError, match=re.escape(f"{cell}: source")):
        getattr(g, cell)(np.zeros((T, N, I), np.float32).tolist(), recurrentWeight=R)


@pytest.mark.parametrize("cell", CELLS)
def test_bidirectional_flag_must_match_shapes(cell):
    with pytest.raises(ValueError, match=re.escape(f"{cell}: recurrentWeight")):
        build(cell, bidirectional=False,
              shapes={"recurrentWeight": shapes_for(cell, bidirectional=True)["recurrentWeight"]})
    with pytest.raises(ValueError, match=re.escape(f"{cell}: recurrentWeight")):
        build(cell, bidirectional=True,
              shapes={"recurrentWeight": shapes_for(cell, bidirectional=False)["recurrentWeight"]})
    # Right R, but the other inputs in the unidirectional layout.
    uni = shapes_for(cell, bidirectional=False)
    with pytest.raises(ValueError, match=re.escape(f"{cell}: inputWeight")):
        build(cell, bidirectional=True, shapes={"inputWeight": uni["inputWeight"]})
    with pytest.raises(ValueError, match=re.escape(f"{cell}: initState")):
        build(cell, bidirectional=True, shapes={"initState": uni["initState"]})


# Descriptor properties that change the math: a gradient op must not differ from its forward.
MISMATCHES = [
    ("singleGateRNN", {"activation": rg.RNNActivation.tanh}, "activation"),
    ("singleGateRNN", {"reverse": True}, "reverse"),
    ("LSTM", {"forgetGateLast": True}, "forgetGateLast"),
    ("LSTM", {"reverse": True}, "reverse"),
    ("LSTM", {"cellGateActivation": rg.RNNActivation.sigmoid}, "cellGateActivation"),
    ("GRU", {"resetAfter": True}, "resetAfter"),
    ("GRU", {"resetGateFirst": True}, "resetGateFirst"),
    ("GRU", {"flipZ": True}, "flipZ"),
    ("GRU", {"outputGateActivation": rg.RNNActivation.relu}, "outputGateActivation"),
]


def _forward_and_gradient(cell, forward_props, gradient_props):
    """Forward op with ``forward_props`` (+training), then its gradient op with
    ``gradient_props``; returns (graph, placeholders, gradient tensors)."""
    g = rg.Graph()
    shapes = shapes_for(cell)
    ph = {k: g.placeholder(shape=v, dataType=rg.float64, name=k) for k, v in shapes.items()}
    inputs = {k: v for k, v in ph.items() if k != "source"}
    outputs = getattr(g, cell)(ph["source"], **inputs,
                               descriptor=DESCRIPTORS[cell](training=True, **forward_props))
    saved = dict(zip(["h", "c", "zState"] if cell == "LSTM" else ["h", "zState"], outputs))
    extra = {"zState": saved["zState"]}
    if cell == "LSTM":
        extra["cellOutputFwd"] = saved["c"]
    if cell == "GRU":
        extra["outputFwd"] = saved["h"]
    dy = g.placeholder(shape=(T, N, H), dataType=rg.float64, name="dy")
    grads = getattr(g, harness.GRADIENT_OPS[cell])(
        ph["source"], **inputs, **extra, sourceGradient=dy,
        descriptor=DESCRIPTORS[cell](**gradient_props))
    return g, {**ph, "dy": dy}, grads


@pytest.mark.parametrize("cell,props,key", MISMATCHES, ids=[f"{c}-{k}" for c, _, k in MISMATCHES])
def test_gradient_descriptor_must_match_the_forward_op(cell, props, key):
    with pytest.raises(ValueError) as info:  # at build time, in both directions
        _forward_and_gradient(cell, {}, props)
    assert key in str(info.value) and harness.GRADIENT_OPS[cell] in str(info.value)
    with pytest.raises(ValueError, match=key):
        _forward_and_gradient(cell, props, {})
    _forward_and_gradient(cell, props, props)  # agreeing descriptors build


@pytest.mark.parametrize("cell", CELLS)
def test_gradient_descriptor_training_and_produce_cell_do_not_matter(cell):
    """SPEC.md section 6: the gradient op's training flag is irrelevant (and produceCell)."""
    props = {"training": True, "produceCell": True} if cell == "LSTM" else {"training": True}
    rng = seeded(f"training-flag-{cell}")
    values = {k: 0.5 * rng.standard_normal(v) for k, v in shapes_for(cell).items()}
    values["mask"] = np.ones_like(values["mask"])
    dy = rng.standard_normal((T, N, H))
    results = []
    for gradient_props in ({}, props):
        g, ph, grads = _forward_and_gradient(cell, {}, gradient_props)
        feeds = {ph[k]: v for k, v in values.items()} | {ph["dy"]: dy}
        out = g.run(feeds=feeds, targetTensors=grads)
        results.append([out[t] for t in grads])
    # Equal up to rounding: the vectorised kernels' summation order follows buffer alignment.
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


# ---------------------------------------------------------------------------------------
# Run-time shape errors (placeholders with unknown dimensions)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cell", CELLS)
def test_run_time_shape_errors_name_op_and_label(cell):
    G = GATES[cell]
    g = rg.Graph()
    x = g.placeholder(shape=(None, None, I), dataType=rg.float64, name="x")
    R = g.placeholder(shape=(None, None), dataType=rg.float64, name="R")
    W = g.placeholder(shape=(None, I), dataType=rg.float64, name="W")
    h0 = g.placeholder(shape=(None, None), dataType=rg.float64, name="h0")
    m = g.placeholder(shape=(None, None, None), dataType=rg.float64, name="m")
    outputs = getattr(g, cell)(x, recurrentWeight=R, inputWeight=W, initState=h0, mask=m,
                               descriptor=DESCRIPTORS[cell](training=True))
    h = outputs[0]
    assert h.shape[1] is None  # N is really unknown until run time
    saved = dict(zip(["h", "c", "zState"] if cell == "LSTM" else ["h", "zState"], outputs))
    dy = g.placeholder(shape=(None, None, None), dataType=rg.float64, name="dy")
    extra = {"cellOutputFwd": saved["c"]} if cell == "LSTM" else {}
    if cell == "GRU":
        extra["outputFwd"] = saved["h"]
    grads = getattr(g, harness.GRADIENT_OPS[cell])(
        x, recurrentWeight=R, inputWeight=W, initState=h0, mask=m, sourceGradient=dy,
        zState=saved["zState"], **extra, descriptor=DESCRIPTORS[cell]())
    good = {x: np.zeros((T, N, I)), R: np.zeros((G * H, H)), W: np.zeros((G * H, I)),
            h0: np.zeros((N, H)), m: np.ones((T, N, H)), dy: np.zeros((T, N, H))}
    assert g.run(feeds=good, targetTensors=[h])[h].shape == (T, N, H)
    assert len(g.run(feeds=good, targetTensors=grads)) == len(grads)
    bad_feeds = [
        (R, np.zeros(((G + 1) * H, H)), cell, "recurrentWeight", h),
        (W, np.zeros(((G + 1) * H, I)), cell, "inputWeight", h),
        (h0, np.zeros((N + 1, H)), cell, "initState", h),
        (m, np.ones((T, N, H + 1)), cell, "mask", h),
        (dy, np.zeros((T + 1, N, H)), harness.GRADIENT_OPS[cell], "sourceGradient", grads[0]),
        (dy, np.zeros((T, N, H + 1)), harness.GRADIENT_OPS[cell], "sourceGradient", grads[0]),
    ]
    for placeholder, value, op, label, target in bad_feeds:
        with pytest.raises(ValueError, match=re.escape(f"{op}: {label}")):
            g.run(feeds=good | {placeholder: value}, targetTensors=[target])


# ---------------------------------------------------------------------------------------
# NaN propagation
# ---------------------------------------------------------------------------------------

NAN_DIRECTIONS = {"fwd": {}, "reverse": {"reverse": True}, "bi": {"bidirectional": True}}


def _nan_case(cell, direction, properties, t_nan, n_nan):
    rng = seeded(f"nan-{cell}-{direction}-{properties}")
    bidirectional = direction == "bi"
    x = harness.make_inputs(cell, rng, T=5, N=3, I=3, H=2, bidirectional=bidirectional)
    x["source"][t_nan, n_nan, 1] = np.nan
    desc = DESCRIPTORS[cell](**NAN_DIRECTIONS[direction], **properties)
    return x, desc


NAN_CASES = [(c, d, {}) for c in CELLS for d in NAN_DIRECTIONS] + [
    ("singleGateRNN", "fwd", {"activation": a}) for a in rg.RNNActivation
] + [("LSTM", "fwd", {"activation": rg.RNNActivation.relu}),
     ("GRU", "reverse", {"outputGateActivation": rg.RNNActivation.hardSigmoid})]


@pytest.mark.parametrize("cell,direction,properties", NAN_CASES,
                         ids=[f"{c}-{d}" + "".join(f"-{v.name}" for v in p.values())
                              for c, d, p in NAN_CASES])
def test_nan_in_source_propagates_forward_in_processing_order_only(cell, direction, properties):
    t_nan, n_nan, Hs = 2, 1, 2
    x, desc = _nan_case(cell, direction, properties, t_nan, n_nan)
    h = harness.forward(cell, x, desc)["h"]
    others = [n for n in range(3) if n != n_nan]
    assert np.all(np.isfinite(h[:, others])), "NaN leaked into another batch row"
    halves = {"fwd": [("fwd", slice(0, Hs))], "reverse": [("rev", slice(0, Hs))],
              "bi": [("fwd", slice(0, Hs)), ("rev", slice(Hs, 2 * Hs))]}[direction]
    for order, cols in halves:
        row = h[:, n_nan, cols]
        if order == "fwd":  # t_nan and every later step are NaN, earlier steps are not
            assert np.all(np.isnan(row[t_nan:])) and np.all(np.isfinite(row[:t_nan]))
        else:  # reverse: t_nan and every earlier step
            assert np.all(np.isnan(row[:t_nan + 1])) and np.all(np.isfinite(row[t_nan + 1:]))


@pytest.mark.parametrize("activation", list(rg.RNNActivation), ids=lambda a: a.name)
def test_activation_of_nan_is_nan(activation):
    """relu(NaN) and hardSigmoid(NaN) must not clamp NaN to a number (no std::max)."""
    source = np.array([[[np.nan, 1.0]]])  # T = N = 1, H = 2, no inputWeight: z = source
    for dtype in (np.float64, np.float32):
        out = harness.forward("singleGateRNN",
                              {"source": source.astype(dtype),
                               "recurrentWeight": np.zeros((2, 2), dtype)},
                              rg.SingleGateRNNDescriptor(activation=activation, training=True))
        assert np.isnan(out["h"][0, 0, 0]) and np.isnan(out["zState"][0, 0, 0])
        assert np.isfinite(out["h"][0, 0, 1])


@pytest.mark.parametrize("label", ["recurrentWeight", "inputWeight", "bias"])
@pytest.mark.parametrize("cell", CELLS)
def test_nan_in_a_weight_gives_nan_outputs(cell, label):
    """One NaN weight: every output from the second step on is NaN (the NaN state feeds
    every unit through R); initState is non-zero so R touches step 0 too."""
    rng = seeded(f"nan-weight-{cell}-{label}")
    x = harness.make_inputs(cell, rng, T=4, N=2, I=3, H=2)
    x[label].flat[0] = np.nan
    h = harness.forward(cell, x, DESCRIPTORS[cell]())["h"]
    assert np.all(np.isnan(h[1:]))
    assert np.any(np.isnan(h[0]))


@pytest.mark.parametrize("cell", CELLS)
def test_nan_in_source_gradient_propagates_backward_in_time(cell):
    """dL/dh NaN at step t (forward direction) reaches dsource at t and earlier only, and the
    weight gradients (sums over all steps)."""
    rng = seeded(f"nan-backward-{cell}")
    x = harness.make_inputs(cell, rng, T=5, N=3, I=3, H=2, peephole=True)
    dy = rng.standard_normal((5, 3, 2))
    dy[2, 1, 0] = np.nan
    desc = DESCRIPTORS[cell]()
    if cell == "singleGateRNN":
        desc.activation = rg.RNNActivation.tanh  # relu' = 0 would (rightly) stop the NaN
    grads = harness.gradients(cell, x, desc, dy)
    ds = grads["source"]
    assert np.all(np.isnan(ds[:3, 1])) and np.all(np.isfinite(ds[3:])) and np.all(
        np.isfinite(ds[:, [0, 2]]))
    assert np.all(np.isnan(grads["initState"][1])) and np.all(np.isfinite(grads["initState"][[0, 2]]))
    assert np.any(np.isnan(grads["recurrentWeight"])) and np.any(np.isnan(grads["bias"]))


# ---------------------------------------------------------------------------------------
# Empty T and N; T = 1 and N = 1
# ---------------------------------------------------------------------------------------


def _empty_case(cell, Ts, Ns, bidirectional, stateGradient):
    rng = seeded(f"empty-{cell}-{Ts}-{Ns}-{bidirectional}-{stateGradient}")
    x = harness.make_inputs(cell, rng, T=Ts, N=Ns, I=3, H=2, bidirectional=bidirectional,
                            mask=True, peephole=True, secondaryBias=True)
    D = 2 if bidirectional else 1
    desc = DESCRIPTORS[cell](bidirectional=bidirectional)
    if cell == "GRU":
        desc.resetAfter = True
    dS = rng.standard_normal((Ns, D * 2)) if stateGradient else None
    dC = rng.standard_normal((Ns, D * 2)) if stateGradient and cell == "LSTM" else None
    return x, desc, dS, dC


# SPEC.md section 6: the returned gradients, in order.
RETURNED = {"singleGateRNN": ("source", "recurrentWeight", "inputWeight", "bias", "initState"),
            "LSTM": ("source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
                     "initCell"),
            "GRU": ("source", "recurrentWeight", "inputWeight", "bias", "initState",
                    "secondaryBias")}

EMPTY = [(c, t, n, b, s) for c in CELLS for (t, n) in ((0, 2), (3, 0), (0, 0))
         for b in (False, True) for s in (True, False) if not (s is False and (t, n) != (0, 2))]


@pytest.mark.parametrize("cell,Ts,Ns,bidirectional,stateGradient", EMPTY,
                         ids=[f"{c}-T{t}-N{n}-{'bi' if b else 'uni'}-{'dS' if s else 'nodS'}"
                              for c, t, n, b, s in EMPTY])
def test_empty_sequence_or_batch(cell, Ts, Ns, bidirectional, stateGradient):
    x, desc, dS, dC = _empty_case(cell, Ts, Ns, bidirectional, stateGradient)
    G, D = GATES[cell], 2 if bidirectional else 1
    train = desc.copy()
    train.training = True
    out = harness.forward(cell, x, train)
    assert out["h"].shape == (Ts, Ns, D * 2)
    assert out["zState"].shape == (Ts, Ns, D * G * 2)
    if cell == "LSTM":
        assert out["c"].shape == (Ts, Ns, D * 2)
    grads = harness.gradients(cell, x, desc, np.zeros((Ts, Ns, D * 2)), dS, dC)
    assert list(grads) == [k for k in RETURNED[cell] if k in x]
    for label, grad in grads.items():
        assert grad.shape == x[label].shape, label
        assert np.all(np.isfinite(grad)), label
    for label in ("recurrentWeight", "inputWeight", "bias", "peephole", "secondaryBias"):
        if label in grads:  # no step, or no batch row: nothing to accumulate
            np.testing.assert_array_equal(grads[label], 0, err_msg=label)
    if Ns > 0:  # T = 0: the final state is the initial state
        expected = dS if dS is not None else np.zeros((Ns, D * 2))
        np.testing.assert_array_equal(grads["initState"], expected)
        if cell == "LSTM":
            np.testing.assert_array_equal(grads["initCell"],
                                          dC if dC is not None else np.zeros((Ns, D * 2)))


SMALL = [(c, t, n, b) for c in CELLS for (t, n) in ((1, 3), (4, 1), (1, 1)) for b in (False, True)]


@pytest.mark.parametrize("cell,Ts,Ns,bidirectional", SMALL,
                         ids=[f"{c}-T{t}-N{n}-{'bi' if b else 'uni'}" for c, t, n, b in SMALL])
def test_single_step_and_single_row(cell, Ts, Ns, bidirectional):
    """T = 1 and N = 1: forward equals the reference, every gradient its finite difference
    (initState and initCell non-zero, mask on, H = 2 != I = 3)."""
    rng = seeded(f"small-{cell}-{Ts}-{Ns}-{bidirectional}")
    x = harness.make_inputs(cell, rng, T=Ts, N=Ns, I=3, H=2, bidirectional=bidirectional,
                            mask=True, peephole=True, secondaryBias=True)
    desc = DESCRIPTORS[cell](bidirectional=bidirectional)
    if cell == "GRU":
        desc.resetAfter = True
    if cell == "singleGateRNN":
        desc.activation = rg.RNNActivation.tanh
    train = desc.copy()
    train.training = True
    out = harness.forward(cell, x, train)
    expected = harness.reference_forward(cell, x, desc)
    for name in expected:
        np.testing.assert_allclose(out[name], expected[name], rtol=1e-12, atol=1e-12, err_msg=name)
    D = 2 if bidirectional else 1
    dy = rng.standard_normal((Ts, Ns, D * 2))
    dS = rng.standard_normal((Ns, D * 2))
    dC = rng.standard_normal((Ns, D * 2)) if cell == "LSTM" else None
    analytic = harness.gradients(cell, x, desc, dy, dS, dC)
    loss = harness.loss_function(cell, desc, 2, dy, dS, dC, use_reference=True)
    differentiable = {k: v for k, v in x.items() if k != "mask"}
    numeric = gradcheck.numerical_gradients(lambda a: loss({**x, **a}), differentiable)
    gradcheck.assert_gradients_close(analytic, numeric, f"{cell} T={Ts} N={Ns} bi={bidirectional}")
