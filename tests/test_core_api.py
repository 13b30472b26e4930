"""The private compiled module called directly, as a caller bypassing the Graph would: its
typed option structs, its label-keyed inputs, and the errors it raises for bad arrays,
unknown labels and bad options (TypeError/ValueError naming the op and the label, never a
crash). Every kernel-level module this machine runs is checked."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rnngraph import _native

CORES = {level: _native.load(level) for level in _native.supported_levels()}
T, N, I, H = 3, 2, 3, 4
CELLS = ("singleGateRNN", "LSTM", "GRU")
OPTIONS = {"singleGateRNN": "SingleGateRNNOptions", "LSTM": "LSTMOptions", "GRU": "GRUOptions"}


def options(core, cell, **properties):
    """The core's typed options for ``cell`` (each kernel-level module has its own types)."""
    return getattr(core, OPTIONS[cell])(**properties)


def core_arrays(core, cell, dtype=np.float64):
    G = getattr(core, OPTIONS[cell]).gates
    return {"source": np.zeros((T, N, I), dtype), "recurrentWeight": np.zeros((G * H, H), dtype),
            "inputWeight": np.zeros((G * H, I), dtype)}


def core_gradient_arrays(core, cell, dtype=np.float64):
    G = getattr(core, OPTIONS[cell]).gates
    arrays = core_arrays(core, cell, dtype) | {"sourceGradient": np.zeros((T, N, H), dtype),
                                               "zState": np.zeros((T, N, G * H), dtype)}
    if cell == "LSTM":
        arrays["cellOutputFwd"] = np.zeros((T, N, H), dtype)
    if cell == "GRU":
        arrays["outputFwd"] = np.zeros((T, N, H), dtype)
    return arrays


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
    arrays = core_arrays(core, cell)
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
    arrays = core_gradient_arrays(core, cell)
    core.rnn_gradients(options(core, cell), arrays)  # the unmodified call works
    arrays[label] = corrupt(arrays.get(label, np.ones((T, N, H))))
    with pytest.raises(error, match=re.escape(label)) as caught:
        core.rnn_gradients(options(core, cell), arrays)
    assert f"{cell}Gradients" in str(caught.value)


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("level", list(CORES))
def test_missing_saved_tensors_and_foreign_labels_are_refused(level, cell):
    core = CORES[level]
    arrays = core_gradient_arrays(core, cell)
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
            core.rnn_forward(options(core, cell), core_arrays(core, cell) | {label: value})


def test_inputs_must_be_a_dict_of_labels():
    core = _native.core
    arrays = core_arrays(core, "singleGateRNN")
    with pytest.raises(TypeError, match="singleGateRNN: inputs: expected a dict"):
        core.rnn_forward(options(core, "singleGateRNN"), list(arrays.items()))
    with pytest.raises(ValueError, match="unknown label 1"):
        core.rnn_forward(options(core, "singleGateRNN"), arrays | {1: None})


@pytest.mark.parametrize("level", list(CORES))
def test_options_are_typed(level):
    core = CORES[level]
    arrays = core_arrays(core, "singleGateRNN")
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
    np.testing.assert_array_equal(h, core.rnn_forward(core.SingleGateRNNOptions(reverse=True), arrays)[0])
    assert [(t.op, t.gradient_op, t.gates) for t in
            (core.SingleGateRNNOptions, core.LSTMOptions, core.GRUOptions)] == [
        ("singleGateRNN", "singleGateRNNGradients", 1), ("LSTM", "LSTMGradients", 4),
        ("GRU", "GRUGradients", 3)]
    # The options of another cell are refused through the shapes they imply.
    with pytest.raises(ValueError, match="GRU: recurrentWeight: expected shape"):
        core.rnn_forward(core.GRUOptions(), arrays)


def test_force_paths_validates_its_names():
    core = _native.core
    assert core._forced_paths() == {"product": "auto", "tile": "auto", "split": "auto"}
    with pytest.raises(ValueError, match="product: expected one of auto, packed, dot, blas, small"):
        core._force_paths(product="fast")
    with pytest.raises(ValueError, match="split"):
        core._force_paths(split="threads")
    assert core._forced_paths() == {"product": "auto", "tile": "auto", "split": "auto"}
    sites = dict(core._parallel_thresholds())
    assert set(sites) == {"recurrence", "step", "gemm", "projection", "pass", "pack"}
    with pytest.raises(ValueError, match="unknown site 'x'"):
        core._set_parallel_threshold("x", 1)
