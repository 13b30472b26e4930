"""The Graph surface (SPEC.md section 7): placeholders with unknown dimensions, constants,
run and its targets, tensors of another graph, data types, Tensor attributes and
Graph.gradients. Feeds: test_graph_feeds.py; descriptors: test_descriptors.py."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from toolkit import Case, Signals, assert_all_close, assert_close, draw_inputs, gradients, reference
from toolkit.placeholders import feeds, on_placeholders

CASE = Case.parse("singleGateRNN", "fwd-act=tanh-h0-H4")  # T3 N2 I3 H4
T, N, I, H = CASE.T, CASE.N, CASE.I, CASE.H


def test_placeholder_with_none_dims_runs_with_different_T(rng):
    g, ph, (h,) = on_placeholders(CASE, shapes={"source": (None, N, I)}, dataType=rg.float64)
    assert ph["source"].shape == (None, N, I)
    assert h.shape == (None, N, H)  # T unknown at build time, N and H inferred
    for steps in (1, 3, 7):
        x = draw_inputs(CASE.but(T=steps), rng)
        out = g.run(feeds=feeds(ph, x), targetTensors=[h])
        assert out[h].shape == (steps, N, H)
        assert_close(out[h], reference(CASE, x)["h"], "float64", f"T = {steps}")


def test_placeholder_with_all_dims_unknown_infers_what_it_can(rng):
    case = Case("singleGateRNN", bias=False, H=H)  # relu
    unknown = {"source": (None, None, None), "inputWeight": (None, None)}
    g, ph, (h, z) = on_placeholders(case, shapes=unknown, dataType=rg.float64,
                                    descriptor=case.descriptor(training=True))
    assert h.shape == (None, None, H) and z.shape == (None, None, H)
    x = draw_inputs(case, rng)
    out = g.run(feeds=feeds(ph, x), targetTensors=[h])
    assert_close(out[h], reference(case, x)["h"], "float64", "h")


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


def test_constants_as_op_inputs(rng):
    case = CASE.but(initState=None)
    x = draw_inputs(case, rng)
    x["bias"] = np.full(H, 0.25)
    g = rg.Graph()
    source = g.placeholder(shape=(T, N, I), dataType=rg.float64, name="x")
    (h,) = g.singleGateRNN(source, recurrentWeight=g.constant(x["recurrentWeight"]),
                           inputWeight=g.constant(x["inputWeight"]),
                           bias=g.constant(0.25, shape=(H,), dataType=rg.float64),
                           descriptor=case.descriptor())
    out = g.run(feeds={source: x["source"]}, targetTensors=[h])
    assert_close(out[h], reference(case, x)["h"], "float64", "h")


def test_run_returns_exactly_the_requested_targets(rng):
    relu = Case("singleGateRNN", initState="[N,DH]", H=H)
    x = draw_inputs(relu, rng)
    g, ph, (h, z) = on_placeholders(relu, dataType=rg.float64,
                                    descriptor=relu.descriptor(training=True))
    (h2,) = g.singleGateRNN(ph["source"], recurrentWeight=ph["recurrentWeight"],
                            inputWeight=ph["inputWeight"])
    only_z = g.run(feeds=feeds(ph, x), targetTensors=[z])
    assert isinstance(only_z, dict) and list(only_z) == [z]
    assert isinstance(only_z[z], np.ndarray) and only_z[z].shape == (T, N, H)
    both = g.run(feeds=feeds(ph, x), targetTensors=[h2, h])
    assert set(both) == {h, h2}
    # h2 needs neither bias nor initState: its placeholders need no feed.
    weights = ("source", "recurrentWeight", "inputWeight")
    partial = g.run(feeds={ph[k]: x[k] for k in weights}, targetTensors=[h2])
    np.testing.assert_array_equal(partial[h2], both[h2])
    np.testing.assert_array_equal(both[h], np.maximum(only_z[z], 0))


def test_tensors_from_another_graph_are_rejected(rng):
    g, ph, (h,) = on_placeholders(CASE)
    other = rg.Graph()
    foreign = other.placeholder(shape=(H, H), dataType=rg.float32, name="foreign")
    x = draw_inputs(CASE.but(dtype="float32"), rng)
    with pytest.raises(ValueError, match="another Graph"):
        g.run(feeds={**feeds(ph, x), foreign: x["recurrentWeight"]}, targetTensors=[h])
    with pytest.raises(ValueError, match="another Graph"):
        g.run(feeds=feeds(ph, x), targetTensors=[h, foreign])
    with pytest.raises(ValueError, match="another Graph"):
        g.singleGateRNN(ph["source"], recurrentWeight=foreign, inputWeight=ph["inputWeight"])
    with pytest.raises(ValueError, match="another Graph"):
        g.gradients(of=h, with_=[foreign])
    with pytest.raises(ValueError, match="another Graph"):
        other.gradients(of=h, with_=[foreign])


def test_target_tensors_must_be_a_list():
    g = rg.Graph()
    x = g.placeholder(shape=(2, 1, 3), dataType=rg.float32, name="x")
    R = g.constant(np.eye(3, dtype=np.float32))
    W = g.constant(np.ones((3, 3), dtype=np.float32))
    (h,) = g.singleGateRNN(x, recurrentWeight=R, inputWeight=W)
    fed = {x: np.ones((2, 1, 3), np.float32)}
    for bad in (None, h):
        with pytest.raises(TypeError, match="targetTensors"):
            g.run(feeds=fed, targetTensors=bad)
    assert g.run(feeds=fed, targetTensors=(h,))[h].shape == (2, 1, 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_data_types_and_tensor_attributes(dtype, rng):
    assert rg.float32 is rg.DataType.float32 and rg.float64 is rg.DataType.float64
    assert rg.float32 != rg.float64
    dataType = getattr(rg, dtype)
    case = Case("singleGateRNN", bias=False, H=H, dtype=dtype)
    names = {"source": "x", "recurrentWeight": "R", "inputWeight": "W"}
    g, ph, (h, z) = on_placeholders(case, shapes={"source": (None, N, I)}, dataType=dataType,
                                    names=names, descriptor=case.descriptor(training=True),
                                    name="cell")
    x, R = ph["source"], ph["recurrentWeight"]
    assert isinstance(x, rg.Tensor) and isinstance(h, rg.Tensor)
    assert x.shape == (None, N, I) and isinstance(x.shape, tuple)
    assert R.shape == (H, H) and h.shape == (None, N, H) and z.shape == (None, N, H)
    assert x.dataType is dataType and h.dataType is dataType and z.dataType is dataType
    assert x.name == "x" and R.name == "R"
    assert "cell" in h.name and "cell" in z.name and h.name != z.name
    out = g.run(feeds=feeds(ph, draw_inputs(case, rng)), targetTensors=[h, z])
    assert out[h].dtype == np.dtype(dtype) and out[z].dtype == np.dtype(dtype)


@pytest.mark.parametrize("training", [False, True], ids=["forward-inference", "forward-training"])
@pytest.mark.parametrize("direction", ["fwd", "bi"], ids=["uni", "bi"])
def test_graph_gradients_match_gradient_op_with_ones(direction, training, rng):
    """gradients(of=h, with_=...) is d(Σh)/d(inputs): singleGateRNNGradients with
    sourceGradient = ones. The initState is given as [1, N, D·H]; a mask is given too."""
    case = Case.parse("singleGateRNN", f"{direction}-act=tanh-h0[1,N,DH]-mask-T4")
    x = draw_inputs(case, rng)
    g, ph, outputs = on_placeholders(case, dataType=rg.float64,
                                     descriptor=case.descriptor(training=training))
    assert len(outputs) == (2 if training else 1)
    wrt = case.returned
    grads = g.gradients(of=outputs[0], with_=[ph[k] for k in wrt])
    assert isinstance(grads, dict) and set(grads) == {ph[k] for k in wrt}
    for label in wrt:
        assert isinstance(grads[ph[label]], rg.Tensor)
        assert grads[ph[label]].shape == x[label].shape
    out = g.run(feeds=feeds(ph, x), targetTensors=[grads[ph[k]] for k in wrt])
    expected = gradients(case, x, Signals(np.ones((case.T, case.N, case.DH))))
    assert_all_close({k: out[grads[ph[k]]] for k in wrt}, expected, "float64", case.id)
