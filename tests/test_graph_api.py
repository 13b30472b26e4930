"""The Graph surface (SPEC.md sections 3 and 7): placeholders, constants, run and its feeds,
descriptors, RNNActivation, data types, Tensor attributes and Graph.gradients."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import harness
import rnngraph as rg
from reference import numpy_rnn

T, N, I, H = 3, 2, 3, 4


def seeded(text: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(text.encode()))


def rnn_arrays(rng, dtype=np.float32, T=T):
    return {"source": rng.standard_normal((T, N, I)).astype(dtype),
            "recurrentWeight": (0.4 * rng.standard_normal((H, H))).astype(dtype),
            "inputWeight": (0.5 * rng.standard_normal((H, I))).astype(dtype),
            "bias": (0.3 * rng.standard_normal(H)).astype(dtype),
            "initState": (0.5 * rng.standard_normal((N, H))).astype(dtype)}


def tanh_rnn_graph(dataType=rg.float32, source_shape=(T, N, I)):
    """A graph with one tanh singleGateRNN on placeholders; returns (graph, placeholders, h)."""
    g = rg.Graph()
    ph = {"source": g.placeholder(shape=source_shape, dataType=dataType, name="source"),
          "recurrentWeight": g.placeholder(shape=(H, H), dataType=dataType, name="R"),
          "inputWeight": g.placeholder(shape=(H, I), dataType=dataType, name="W"),
          "bias": g.placeholder(shape=(H,), dataType=dataType, name="b"),
          "initState": g.placeholder(shape=(N, H), dataType=dataType, name="h0")}
    desc = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh)
    (h,) = g.singleGateRNN(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                           descriptor=desc, name="rnn")
    return g, ph, h


def reference_h(arrays):
    a = {k: np.asarray(v, np.float64) for k, v in arrays.items()}
    return numpy_rnn.single_gate_rnn(a.pop("source"), **a, activation="tanh")["h"]


# ---------------------------------------------------------------------------------------
# Placeholders with unknown dimensions, constants, run
# ---------------------------------------------------------------------------------------


def test_placeholder_with_none_dims_runs_with_different_T():
    g, ph, h = tanh_rnn_graph(rg.float64, source_shape=(None, N, I))
    assert ph["source"].shape == (None, N, I)
    assert h.shape == (None, N, H)  # T unknown at build time, N and H inferred
    for steps in (1, 3, 7):
        arrays = rnn_arrays(seeded(f"T={steps}"), np.float64, T=steps)
        out = g.run(feeds={ph[k]: v for k, v in arrays.items()}, targetTensors=[h])
        assert out[h].shape == (steps, N, H)
        np.testing.assert_allclose(out[h], reference_h(arrays), rtol=1e-12, atol=1e-12)


def test_placeholder_with_all_dims_unknown_infers_what_it_can():
    g = rg.Graph()
    x = g.placeholder(shape=(None, None, None), dataType=rg.float64, name="x")
    R = g.placeholder(shape=(H, H), dataType=rg.float64, name="R")
    W = g.placeholder(shape=(None, None), dataType=rg.float64, name="W")
    h, z = g.singleGateRNN(x, recurrentWeight=R, inputWeight=W,
                           descriptor=rg.SingleGateRNNDescriptor(training=True))
    assert h.shape == (None, None, H) and z.shape == (None, None, H)
    arrays = rnn_arrays(seeded("all-none"), np.float64)
    out = g.run(feeds={x: arrays["source"], R: arrays["recurrentWeight"],
                       W: arrays["inputWeight"]}, targetTensors=[h])
    expected = numpy_rnn.single_gate_rnn(arrays["source"], arrays["recurrentWeight"],
                                         arrays["inputWeight"], activation="relu")["h"]
    np.testing.assert_allclose(out[h], expected, rtol=1e-12, atol=1e-12)


def test_constant_scalar_with_shape_and_array_data():
    g = rg.Graph()
    filled = g.constant(0.5, shape=(2, 3), dataType=rg.float32, name="half")
    data = np.arange(6.0).reshape(2, 3)
    array = g.constant(data)
    reshaped = g.constant(np.arange(6, dtype=np.float32), shape=(3, 2))
    assert filled.shape == (2, 3) and filled.dataType == rg.float32 and filled.name == "half"
    assert array.shape == (2, 3) and array.dataType == rg.float64
    assert reshaped.shape == (3, 2) and reshaped.dataType == rg.float32
    out = g.run(feeds={}, targetTensors=[filled, array, reshaped])
    np.testing.assert_array_equal(out[filled], np.full((2, 3), 0.5, np.float32))
    assert out[filled].dtype == np.float32
    np.testing.assert_array_equal(out[array], data)
    np.testing.assert_array_equal(out[reshaped], np.arange(6.0).reshape(3, 2))
    data[0, 0] = 99.0  # the constant holds its own copy
    np.testing.assert_array_equal(g.run(feeds={}, targetTensors=[array])[array],
                                  np.arange(6.0).reshape(2, 3))


def test_scalar_placeholder_and_constant():
    """Rank-0 tensors: a placeholder of shape () takes a scalar feed, a constant made from a
    scalar without a shape is a scalar."""
    g = rg.Graph()
    p = g.placeholder(shape=(), dataType=rg.float64, name="s")
    c = g.constant(0.5, dataType=rg.float64)
    assert p.shape == () and c.shape == ()
    out = g.run(feeds={p: np.float64(2.0)}, targetTensors=[p, c])
    assert out[p].shape == () and out[p] == 2.0
    assert out[c].shape == () and out[c] == 0.5
    assert g.run(feeds={p: 3}, targetTensors=[p])[p] == 3.0  # a Python int is a feed too


def test_constants_as_op_inputs():
    rng = seeded("constants")
    arrays = rnn_arrays(rng, np.float64)
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float64, name="x")
    (h,) = g.singleGateRNN(x, recurrentWeight=g.constant(arrays["recurrentWeight"]),
                           inputWeight=g.constant(arrays["inputWeight"]),
                           bias=g.constant(0.25, shape=(H,), dataType=rg.float64),
                           descriptor=rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh))
    out = g.run(feeds={x: arrays["source"]}, targetTensors=[h])
    expected = numpy_rnn.single_gate_rnn(arrays["source"], arrays["recurrentWeight"],
                                         arrays["inputWeight"], np.full(H, 0.25),
                                         activation="tanh")["h"]
    np.testing.assert_allclose(out[h], expected, rtol=1e-12, atol=1e-12)


def test_run_returns_exactly_the_requested_targets():
    g = rg.Graph()
    arrays = rnn_arrays(seeded("targets"), np.float64)
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in arrays.items()}
    h, z = g.singleGateRNN(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                           descriptor=rg.SingleGateRNNDescriptor(training=True))
    (h2,) = g.singleGateRNN(ph["source"], recurrentWeight=ph["recurrentWeight"],
                            inputWeight=ph["inputWeight"])
    feeds = {ph[k]: v for k, v in arrays.items()}
    only_z = g.run(feeds=feeds, targetTensors=[z])
    assert isinstance(only_z, dict) and list(only_z) == [z]
    assert isinstance(only_z[z], np.ndarray) and only_z[z].shape == (T, N, H)
    both = g.run(feeds=feeds, targetTensors=[h2, h])
    assert set(both) == {h, h2}
    # h2 needs neither bias nor initState: its placeholders need no feed.
    partial = g.run(feeds={ph["source"]: arrays["source"],
                           ph["recurrentWeight"]: arrays["recurrentWeight"],
                           ph["inputWeight"]: arrays["inputWeight"]}, targetTensors=[h2])
    np.testing.assert_array_equal(partial[h2], both[h2])
    np.testing.assert_array_equal(both[h], np.maximum(only_z[z], 0))


# ---------------------------------------------------------------------------------------
# Feeds: conversions that must give the same result, and rejected feeds
# ---------------------------------------------------------------------------------------


def _misaligned(array):
    """The same values in a C-contiguous array whose data pointer is not aligned."""
    raw = np.zeros(array.nbytes + 1, np.uint8)
    view = np.frombuffer(raw[1:].data, dtype=array.dtype, count=array.size).reshape(array.shape)
    view[...] = array
    assert view.flags.c_contiguous and not view.flags.aligned
    return view


def _transposed_view(array):
    view = np.ascontiguousarray(array.transpose(2, 1, 0)).transpose(2, 1, 0)
    assert not view.flags.c_contiguous
    return view


def _strided_slice(array):
    big = np.zeros((2 * array.shape[0], array.shape[1], 3 * array.shape[2]), array.dtype)
    big[::2, :, ::3] = array
    view = big[::2, :, ::3]
    assert not view.flags.c_contiguous
    return view


def _reversed_view(array):
    view = np.ascontiguousarray(array[::-1])[::-1]
    assert view.strides[0] < 0
    return view


def _read_only(array):
    view = array.copy()
    view.setflags(write=False)
    return view


def _fortran(array):
    view = np.asfortranarray(array)
    assert not view.flags.c_contiguous
    return view


SAME_VALUE_FEEDS = {
    "float64-to-float32": lambda a: a.astype(np.float64),
    "float16": lambda a: a.astype(np.float16),
    "big-endian": lambda a: a.astype(">f4"),
    "list": lambda a: a.tolist(),
    "transposed-view": _transposed_view,
    "strided-slice": _strided_slice,
    "negative-strides": _reversed_view,
    "fortran-order": _fortran,
    "read-only": _read_only,
    "misaligned": _misaligned,
}


@pytest.mark.parametrize("convert", list(SAME_VALUE_FEEDS.values()), ids=list(SAME_VALUE_FEEDS))
def test_feed_conversions_give_the_clean_result(convert):
    """Every feed below holds exactly the float32 values of the clean array (values chosen
    representable in float16 too), so the result must be bit-identical."""
    rng = seeded("feeds")
    arrays = rnn_arrays(rng)
    arrays["source"] = arrays["source"].astype(np.float16).astype(np.float32)
    g, ph, h = tanh_rnn_graph()
    clean = g.run(feeds={ph[k]: v for k, v in arrays.items()}, targetTensors=[h])[h]
    fed = convert(arrays["source"])
    before = np.array(fed, copy=True)
    out = g.run(feeds={ph["source"]: fed, **{ph[k]: v for k, v in arrays.items() if k != "source"}},
                targetTensors=[h])[h]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, clean)
    np.testing.assert_array_equal(np.asarray(fed), before)  # the feed is not modified
    np.testing.assert_allclose(out, reference_h(arrays), rtol=1e-5, atol=1e-6)


def test_non_contiguous_weight_feeds():
    rng = seeded("weights")
    arrays = rnn_arrays(rng)
    g, ph, h = tanh_rnn_graph()
    clean = g.run(feeds={ph[k]: v for k, v in arrays.items()}, targetTensors=[h])[h]
    odd = dict(arrays)
    odd["recurrentWeight"] = np.ascontiguousarray(arrays["recurrentWeight"].T).T  # R as R.T.T
    odd["inputWeight"] = np.asfortranarray(arrays["inputWeight"])
    odd["bias"] = np.repeat(arrays["bias"], 2)[::2]
    odd["initState"] = _read_only(arrays["initState"])
    out = g.run(feeds={ph[k]: v for k, v in odd.items()}, targetTensors=[h])[h]
    np.testing.assert_array_equal(out, clean)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_feeds_convert_to_the_placeholder_type(dtype):
    rng = seeded(f"ints-{np.dtype(dtype).name}")
    arrays = rnn_arrays(rng, np.float64)
    ints = rng.integers(0, 3, size=(T, N, I))
    arrays["source"] = ints.astype(np.float64)
    g, ph, h = tanh_rnn_graph(rg.float64)
    clean = g.run(feeds={ph[k]: v for k, v in arrays.items()}, targetTensors=[h])[h]
    out = g.run(feeds={ph["source"]: ints.astype(dtype),
                       **{ph[k]: v for k, v in arrays.items() if k != "source"}},
                targetTensors=[h])[h]
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, clean)


REJECTED_FEEDS = {
    "complex": (np.zeros((T, N, I), np.complex128), TypeError),
    "strings": (np.full((T, N, I), "a"), TypeError),
    "objects": (np.full((T, N, I), None, dtype=object), TypeError),
    "None": (None, TypeError),
    "wrong-shape": (np.zeros((T, N, I + 1), np.float32), ValueError),
    "wrong-rank": (np.zeros((T, N * I), np.float32), ValueError),
    "ragged-list": ([[[0.0] * I] * N, [[0.0] * I]], (ValueError, TypeError)),
}


@pytest.mark.parametrize("feed,error", list(REJECTED_FEEDS.values()), ids=list(REJECTED_FEEDS))
def test_rejected_feeds_name_the_placeholder(feed, error):
    g, ph, h = tanh_rnn_graph()
    arrays = rnn_arrays(seeded("rejected"))
    with pytest.raises(error, match="'source'"):
        g.run(feeds={ph["source"]: feed, **{ph[k]: v for k, v in arrays.items() if k != "source"}},
              targetTensors=[h])


def test_symbolic_tensor_is_not_a_feed():
    g, ph, h = tanh_rnn_graph()
    arrays = rnn_arrays(seeded("symbolic"))
    with pytest.raises(TypeError, match="'source'"):
        g.run(feeds={ph["source"]: ph["source"],
                     **{ph[k]: v for k, v in arrays.items() if k != "source"}}, targetTensors=[h])


def test_missing_feed_names_the_placeholder():
    g, ph, h = tanh_rnn_graph()
    arrays = rnn_arrays(seeded("missing"))
    with pytest.raises(ValueError, match="'R'"):
        g.run(feeds={ph[k]: v for k, v in arrays.items() if k != "recurrentWeight"},
              targetTensors=[h])


def test_feeding_a_non_placeholder_is_rejected():
    g, ph, h = tanh_rnn_graph()
    arrays = rnn_arrays(seeded("non-placeholder"))
    with pytest.raises(ValueError, match="not a placeholder"):
        g.run(feeds={h: np.zeros((T, N, H), np.float32), **{ph[k]: v for k, v in arrays.items()}},
              targetTensors=[h])
    const = g.constant(1.0, shape=(2,), dataType=rg.float32)
    with pytest.raises(ValueError, match="not a placeholder"):
        g.run(feeds={const: np.zeros(2, np.float32)}, targetTensors=[const])


def test_tensors_from_another_graph_are_rejected():
    g, ph, h = tanh_rnn_graph()
    other = rg.Graph()
    foreign = other.placeholder(shape=(H, H), dataType=rg.float32, name="foreign")
    arrays = rnn_arrays(seeded("foreign"))
    feeds = {ph[k]: v for k, v in arrays.items()}
    with pytest.raises(ValueError, match="another Graph"):
        g.run(feeds={**feeds, foreign: arrays["recurrentWeight"]}, targetTensors=[h])
    with pytest.raises(ValueError, match="another Graph"):
        g.run(feeds=feeds, targetTensors=[h, foreign])
    with pytest.raises(ValueError, match="another Graph"):
        g.singleGateRNN(ph["source"], recurrentWeight=foreign, inputWeight=ph["inputWeight"])
    with pytest.raises(ValueError, match="another Graph"):
        g.gradients(of=h, with_=[foreign])
    with pytest.raises(ValueError, match="another Graph"):
        other.gradients(of=h, with_=[foreign])


# ---------------------------------------------------------------------------------------
# Descriptors and RNNActivation
# ---------------------------------------------------------------------------------------

DEFAULTS = {
    rg.SingleGateRNNDescriptor: {"reverse": False, "bidirectional": False, "training": False,
                                 "activation": rg.RNNActivation.relu},
    rg.LSTMDescriptor: {"reverse": False, "bidirectional": False, "produceCell": False,
                        "training": False, "forgetGateLast": False,
                        "inputGateActivation": rg.RNNActivation.sigmoid,
                        "forgetGateActivation": rg.RNNActivation.sigmoid,
                        "cellGateActivation": rg.RNNActivation.tanh,
                        "outputGateActivation": rg.RNNActivation.sigmoid,
                        "activation": rg.RNNActivation.tanh},
    rg.GRUDescriptor: {"reverse": False, "bidirectional": False, "training": False,
                       "resetGateFirst": False, "resetAfter": False, "flipZ": False,
                       "updateGateActivation": rg.RNNActivation.sigmoid,
                       "resetGateActivation": rg.RNNActivation.sigmoid,
                       "outputGateActivation": rg.RNNActivation.tanh},
}


@pytest.mark.parametrize("kind", list(DEFAULTS), ids=lambda k: k.__name__)
def test_descriptor_defaults_are_spec_section_3(kind):
    d = kind()
    for name, value in DEFAULTS[kind].items():
        actual = getattr(d, name)
        assert actual == value and type(actual) is type(value), f"{kind.__name__}.{name}"
    assert set(d.as_dict()) == set(DEFAULTS[kind])  # no property beyond SPEC.md's


@pytest.mark.parametrize("kind", list(DEFAULTS), ids=lambda k: k.__name__)
def test_descriptor_property_validation(kind):
    d = kind()
    activations = [n for n, v in DEFAULTS[kind].items() if isinstance(v, rg.RNNActivation)]
    flags = [n for n, v in DEFAULTS[kind].items() if isinstance(v, bool)]
    for name in activations:
        for bad in (7, -1, 5):
            with pytest.raises(ValueError, match=name):
                setattr(d, name, bad)
            with pytest.raises(ValueError):
                kind(**{name: bad})
        for raw in range(5):
            setattr(d, name, raw)
            assert getattr(d, name) == rg.RNNActivation(raw)
            assert isinstance(getattr(d, name), rg.RNNActivation)
    for name in flags:
        for bad in (1, 0, "yes", None):
            with pytest.raises(TypeError, match=name):
                setattr(d, name, bad)
        with pytest.raises(TypeError):
            kind(**{name: 1})
        setattr(d, name, True)
        assert getattr(d, name) is True
    for unknown in ("foo", "bidirectonal", "Reverse"):
        with pytest.raises(AttributeError, match=unknown):
            setattr(d, unknown, True)
        with pytest.raises((AttributeError, TypeError)):
            kind(**{unknown: True})
        assert not hasattr(d, unknown)


def test_rnn_activation_raw_values():
    expected = {"none": 0, "relu": 1, "tanh": 2, "sigmoid": 3, "hardSigmoid": 4}
    assert {a.name: int(a) for a in rg.RNNActivation} == expected
    for name, raw in expected.items():
        assert rg.RNNActivation(raw) is getattr(rg.RNNActivation, name)
    for bad in (5, -1, 7):
        with pytest.raises(ValueError):
            rg.RNNActivation(bad)


def test_descriptor_is_copied_when_an_op_is_built():
    """SPEC.md section 3: later changes to the descriptor do not affect built ops."""
    rng = seeded("copy-on-build")
    arrays = rnn_arrays(rng, np.float64)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in arrays.items()}
    inputs = {k: v for k, v in ph.items() if k != "source"}
    desc = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh, training=True)
    h, z = g.singleGateRNN(ph["source"], **inputs, descriptor=desc)
    dy = g.placeholder(shape=(T, N, H), dataType=rg.float64, name="dy")
    grads = g.singleGateRNNGradients(ph["source"], **inputs, sourceGradient=dy, zState=z,
                                     descriptor=desc)
    desc.activation = rg.RNNActivation.relu
    desc.reverse = True
    desc.training = False
    assert desc.activation == rg.RNNActivation.relu  # the caller's object did change
    dy_value = seeded("copy-dy").standard_normal((T, N, H))
    out = g.run(feeds={dy: dy_value, **{ph[k]: v for k, v in arrays.items()}},
                targetTensors=[h, z, *grads])
    np.testing.assert_allclose(out[h], reference_h(arrays), rtol=1e-12, atol=1e-12)
    expected = harness.gradients("singleGateRNN", arrays,
                                 rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh),
                                 dy_value)
    for tensor, label in zip(grads, expected):
        np.testing.assert_allclose(out[tensor], expected[label], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cell,flag", [("LSTM", "forgetGateLast"), ("GRU", "resetGateFirst")])
def test_descriptor_copy_on_build_lstm_gru(cell, flag):
    rng = seeded(f"copy-{cell}")
    x = harness.make_inputs(cell, rng, H=2)
    desc = harness.descriptor(cell)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    outputs = getattr(g, cell)(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                               descriptor=desc)
    setattr(desc, flag, True)
    desc.reverse = True
    out = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outputs[:1])
    expected = harness.reference_forward(cell, x, harness.descriptor(cell))["h"]
    np.testing.assert_allclose(out[outputs[0]], expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Data types and Tensor attributes
# ---------------------------------------------------------------------------------------


def test_data_types_and_tensor_attributes():
    assert rg.float32 is rg.DataType.float32 and rg.float64 is rg.DataType.float64
    assert rg.float32 != rg.float64
    for dataType, numpy_type in ((rg.float32, np.float32), (rg.float64, np.float64)):
        g = rg.Graph()
        x = g.placeholder(shape=(None, N, I), dataType=dataType, name="x")
        R = g.placeholder(shape=(H, H), dataType=dataType, name="R")
        W = g.placeholder(shape=(H, I), dataType=dataType, name="W")
        h, z = g.singleGateRNN(x, recurrentWeight=R, inputWeight=W,
                               descriptor=rg.SingleGateRNNDescriptor(training=True), name="cell")
        assert isinstance(x, rg.Tensor) and isinstance(h, rg.Tensor)
        assert x.shape == (None, N, I) and isinstance(x.shape, tuple)
        assert R.shape == (H, H) and h.shape == (None, N, H) and z.shape == (None, N, H)
        assert x.dataType is dataType and h.dataType is dataType and z.dataType is dataType
        assert x.name == "x" and R.name == "R"
        assert "cell" in h.name and "cell" in z.name and h.name != z.name
        arrays = rnn_arrays(seeded("dtypes"), numpy_type)
        out = g.run(feeds={x: arrays["source"], R: arrays["recurrentWeight"],
                           W: arrays["inputWeight"]}, targetTensors=[h, z])
        assert out[h].dtype == numpy_type and out[z].dtype == numpy_type


# ---------------------------------------------------------------------------------------
# Graph.gradients
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("training", [False, True], ids=["forward-inference", "forward-training"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_graph_gradients_match_gradient_op_with_ones(bidirectional, training):
    """gradients(of=h, with_=...) is d(Σh)/d(inputs): singleGateRNNGradients with
    sourceGradient = ones. The initState is given as [1, N, D·H]; a mask is given too."""
    rng = seeded(f"graph-gradients-{bidirectional}-{training}")
    x = harness.make_inputs("singleGateRNN", rng, T=4, N=2, I=3, H=2,
                            bidirectional=bidirectional, mask=True)
    D = 2 if bidirectional else 1
    x["initState"] = x["initState"].reshape(1, 2, D * 2)
    desc = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh,
                                      bidirectional=bidirectional, training=training)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    outputs = g.singleGateRNN(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                              descriptor=desc)
    assert len(outputs) == (2 if training else 1)
    wrt = ["source", "recurrentWeight", "inputWeight", "bias", "initState"]
    grads = g.gradients(of=outputs[0], with_=[ph[k] for k in wrt])
    assert isinstance(grads, dict) and set(grads) == {ph[k] for k in wrt}
    for label in wrt:
        assert isinstance(grads[ph[label]], rg.Tensor)
        assert grads[ph[label]].shape == x[label].shape
    out = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=[grads[ph[k]] for k in wrt])
    ones = np.ones((4, 2, D * 2))
    expected = harness.gradients("singleGateRNN", x, desc, ones)
    for label in wrt:
        np.testing.assert_allclose(out[grads[ph[label]]], expected[label], rtol=1e-12,
                                   atol=1e-13, err_msg=label)


def test_target_tensors_must_be_a_list():
    g = rg.Graph()
    x = g.placeholder(shape=(2, 1, 3), dataType=rg.float32, name="x")
    R = g.constant(np.eye(3, dtype=np.float32))
    W = g.constant(np.ones((3, 3), dtype=np.float32))
    (h,) = g.singleGateRNN(x, recurrentWeight=R, inputWeight=W)
    feeds = {x: np.ones((2, 1, 3), np.float32)}
    for bad in (None, h):
        with pytest.raises(TypeError, match="targetTensors"):
            g.run(feeds=feeds, targetTensors=bad)
    assert g.run(feeds=feeds, targetTensors=(h,))[h].shape == (2, 1, 3)
