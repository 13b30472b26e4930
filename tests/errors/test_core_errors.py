"""The private compiled module called directly, as a caller bypassing the Graph would: its
typed option structs, its label-keyed inputs, and the errors it raises for bad arrays,
unknown labels and bad options (TypeError/ValueError naming the op and the label, never a
crash). Every kernel-level module this machine runs is checked."""

from __future__ import annotations

import re

import numpy as np
import pytest

import rnngraph as rg
from rnngraph import _native
from toolkit import CELLS, GATES, GRADIENT_OPS, Case
from toolkit.paths import PRODUCTS, SPLITS, STEPS, SWEEPS, TILES
from toolkit.placeholders import SIZES, input_shapes
from toolkit.spec import DESCRIPTORS

CORES = {level: _native.load(level) for level in _native.supported_levels()}
T, N, I, H = (SIZES[k] for k in "TNIH")
OPTIONS = {cell: DESCRIPTORS[cell].__name__.replace("Descriptor", "Options") for cell in CELLS}


def options(core, cell, **properties):
    """The core's typed options for ``cell`` (each kernel-level module has its own types)."""
    return getattr(core, OPTIONS[cell])(**properties)


def core_arrays(cell, gradient=False):
    """Zeros for source, recurrentWeight and inputWeight (and with ``gradient``, for
    sourceGradient, zState and the saved h / c the gradient op takes)."""
    case = Case(cell, bias=False, signal="dy", **SIZES)
    return {label: np.zeros(shape) for label, shape in input_shapes(case, gradient).items()}


def misaligned(array):
    raw = np.zeros(array.nbytes + 1, np.uint8)
    view = np.frombuffer(raw[1:].data, dtype=array.dtype, count=array.size).reshape(array.shape)
    assert not view.flags.aligned
    return view


BAD_CORE_ARRAYS = [
    ("int-source", "source", lambda a: a.astype(np.int64), TypeError),
    ("float16-source", "source", lambda a: a.astype(np.float16), TypeError),
    ("float32-weight", "recurrentWeight", lambda a: a.astype(np.float32), TypeError),
    ("non-contiguous-weight", "inputWeight", lambda a: np.asfortranarray(a), ValueError),
    ("strided-source", "source", lambda a: np.repeat(a, 2, axis=2)[:, :, ::2], ValueError),
    ("negative-strides", "source", lambda a: a[::-1], ValueError),
    ("misaligned-source", "source", misaligned, ValueError),
    ("wrong-shape-weight", "recurrentWeight", lambda a: np.zeros((a.shape[0] + 1, a.shape[1])),
     ValueError),
    ("wrong-rank-source", "source", lambda a: a.reshape(T, -1), ValueError),
    ("list-source", "source", lambda a: a.tolist(), TypeError),
    ("list-weight", "inputWeight", lambda a: a.tolist(), TypeError),
    ("none-source", "source", lambda a: None, ValueError),
    ("none-weight", "recurrentWeight", lambda a: None, ValueError),
    ("broadcast-mask", "mask", lambda a: np.ones((1, N, H)), ValueError),
]


@pytest.mark.parametrize("name,label,corrupt,error", BAD_CORE_ARRAYS,
                         ids=[c[0] for c in BAD_CORE_ARRAYS])
@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("level", list(CORES))
def test_rnn_forward_rejects_bad_arrays(level, cell, name, label, corrupt, error):
    core = CORES[level]
    arrays = core_arrays(cell)
    core.rnn_forward(options(core, cell), arrays, training=True)  # the unmodified call works
    arrays[label] = corrupt(arrays.get(label, np.ones((T, N, H))))
    with pytest.raises(error, match=re.escape(label)) as caught:
        core.rnn_forward(options(core, cell), arrays, training=True)
    assert cell in str(caught.value)


GRADIENT_BAD = BAD_CORE_ARRAYS + [
    ("none-zState", "zState", lambda a: None, ValueError),
    ("none-sourceGradient", "sourceGradient", lambda a: None, ValueError),
    ("wrong-shape-zState", "zState", lambda a: np.zeros((T + 1,) + a.shape[1:]), ValueError),
    ("float32-sourceGradient", "sourceGradient", lambda a: a.astype(np.float32), TypeError),
    ("transposed-sourceGradient", "sourceGradient",
     lambda a: np.ascontiguousarray(a.transpose(1, 0, 2)).transpose(1, 0, 2), ValueError),
]


@pytest.mark.parametrize("name,label,corrupt,error", GRADIENT_BAD, ids=[c[0] for c in GRADIENT_BAD])
@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("level", list(CORES))
def test_rnn_gradients_rejects_bad_arrays(level, cell, name, label, corrupt, error):
    core = CORES[level]
    arrays = core_arrays(cell, gradient=True)
    core.rnn_gradients(options(core, cell), arrays)  # the unmodified call works
    arrays[label] = corrupt(arrays.get(label, np.ones((T, N, H))))
    with pytest.raises(error, match=re.escape(label)) as caught:
        core.rnn_gradients(options(core, cell), arrays)
    assert f"{cell}Gradients" in str(caught.value)


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("level", list(CORES))
def test_missing_saved_tensors_and_foreign_labels_are_refused(level, cell):
    core = CORES[level]
    arrays = core_arrays(cell, gradient=True)
    if cell in ("LSTM", "GRU"):
        saved = "cellOutputFwd" if cell == "LSTM" else "outputFwd"
        with pytest.raises(ValueError, match=f"{cell}Gradients: {saved} is required"):
            core.rnn_gradients(options(core, cell), arrays | {saved: None})
    foreign = {"initCell": np.zeros((N, H)), "peephole": np.zeros(4 * H),
               "secondaryBias": np.zeros(H), "sourceGradient": np.zeros((T, N, H)), "x": None}
    own = {"LSTM": ("initCell", "peephole"), "GRU": ("secondaryBias",)}.get(cell, ())
    for label, value in foreign.items():
        if label in own:
            continue
        with pytest.raises(ValueError, match=f"{cell}: inputs: unknown label '{label}'"):
            core.rnn_forward(options(core, cell), core_arrays(cell) | {label: value})


def test_inputs_must_be_a_dict_of_labels():
    core = _native.core
    arrays = core_arrays("singleGateRNN")
    with pytest.raises(TypeError, match="singleGateRNN: inputs: expected a dict"):
        core.rnn_forward(options(core, "singleGateRNN"), list(arrays.items()))
    with pytest.raises(ValueError, match="unknown label 1"):
        core.rnn_forward(options(core, "singleGateRNN"), arrays | {1: None})


class Label(str):
    """A str subclass, as a caller's own key type might be."""


@pytest.mark.parametrize("cell", CELLS)
def test_labels_are_read_whatever_their_string_objects(cell, rng):
    """Keys made at run time (not interned, so not the objects the binding compares first)
    and str subclasses name the same inputs as literal keys, for both ops."""
    core = _native.core
    arrays = {label: rng.standard_normal(a.shape) * 0.5
              for label, a in core_arrays(cell, gradient=True).items()}
    fresh = {"".join(list(label)): a for label, a in arrays.items()}
    assert all(key is not label for key, label in zip(fresh, arrays))  # new string objects
    subclassed = {Label(label): a for label, a in arrays.items()}
    forward = {k: v for k, v in arrays.items() if k in core_arrays(cell)}
    expected = core.rnn_forward(options(core, cell), forward, training=True)
    expected_gradients = core.rnn_gradients(options(core, cell), arrays)
    for keys in (fresh, subclassed):
        found = core.rnn_forward(options(core, cell), {k: v for k, v in keys.items()
                                                       if k in forward}, training=True)
        for a, b in zip(found, expected):
            if b is not None:
                np.testing.assert_array_equal(a, b)
        gradients = core.rnn_gradients(options(core, cell), keys)
        assert gradients.keys() == expected_gradients.keys()
        for label, gradient in gradients.items():
            np.testing.assert_array_equal(gradient, expected_gradients[label])
    with pytest.raises(ValueError, match=f"{cell}: inputs: unknown label 'sourcE'"):
        core.rnn_forward(options(core, cell), forward | {"sourcE": None})


@pytest.mark.parametrize("level", list(CORES))
def test_options_are_typed(level):
    core = CORES[level]
    arrays = core_arrays("singleGateRNN")
    for bad in (None, {}, {"reverse": True}, "singleGateRNN"):
        with pytest.raises(TypeError, match="rnn_forward: options: expected SingleGateRNNOptions"):
            core.rnn_forward(bad, arrays)
    with pytest.raises(ValueError, match="singleGateRNN: activation: activation must be 0..4"):
        core.SingleGateRNNOptions(activation=7)
    with pytest.raises(ValueError, match="LSTM: cellGateActivation"):
        core.LSTMOptions(cellGateActivation=-1)
    for flag in ("yes", 1, None):
        with pytest.raises(TypeError):
            core.GRUOptions(resetAfter=flag)
    with pytest.raises(TypeError):
        core.LSTMOptions(activation=2.0)
    with pytest.raises(TypeError):
        core.SingleGateRNNOptions(True)  # keyword-only, as the Swift labels
    # The same options give the same result, and each type names its op and gate count.
    reverse = core.SingleGateRNNOptions(reverse=True)
    assert (reverse.reverse, reverse.bidirectional, reverse.activation) == (True, False, 1)
    h, c, z = core.rnn_forward(reverse, arrays)
    assert c is None and z is None
    again = core.rnn_forward(core.SingleGateRNNOptions(reverse=True), arrays)[0]
    np.testing.assert_array_equal(h, again)
    types = [getattr(core, OPTIONS[cell]) for cell in CELLS]
    assert [(t.op, t.gradient_op, t.gates) for t in types] == [
        (cell, GRADIENT_OPS[cell], GATES[cell]) for cell in CELLS]
    # The options of another cell are refused through the shapes they imply.
    with pytest.raises(ValueError, match="GRU: recurrentWeight: expected shape"):
        core.rnn_forward(core.GRUOptions(), arrays)


def test_force_paths_validates_its_names():
    core = _native.core
    auto = {"product": "auto", "tile": "auto", "split": "auto", "sweep": "auto", "steps": "auto"}
    assert core._forced_paths() == auto
    for kind, names in (("product", PRODUCTS), ("tile", TILES), ("split", SPLITS),
                        ("sweep", SWEEPS), ("steps", STEPS)):
        expected = f"{kind}: expected one of {', '.join(('auto', *names))}"
        with pytest.raises(ValueError, match=re.escape(expected)):
            core._force_paths(**{kind: "fast"})
    assert core._forced_paths() == auto
    sites = dict(core._parallel_thresholds())
    assert set(sites) == {"recurrence", "step", "gemm", "projection", "pass", "pack", "team"}
    with pytest.raises(ValueError, match="unknown site 'x'"):
        core._set_parallel_threshold("x", 1)


def test_a_team_site_of_zero_counts_as_one(rng):
    """The "team" site divides a step's work; set to 0 for a measurement it must not divide
    by zero: every thread the step allows joins the team, with the same results."""
    core = _native.core
    g = rg.Graph()  # N = 2, H = 256: a step large enough for a team (tuning.hpp)
    x = g.placeholder([3, 2, 16], rg.float32)
    weights = {"recurrentWeight": (1024, 256), "inputWeight": (1024, 16)}
    h = g.LSTM(x, **{k: g.constant(0.05 * rng.standard_normal(s, dtype=np.float32))
                     for k, s in weights.items()})[0]
    feed = {x: rng.standard_normal((3, 2, 16), dtype=np.float32)}
    expected = g.run(feeds=feed, targetTensors=[h])[h]
    core._set_parallel_threshold("team", 0)
    try:
        got = g.run(feeds=feed, targetTensors=[h])[h]
    finally:
        core._set_parallel_threshold("team", -1)
    np.testing.assert_array_equal(got, expected)
