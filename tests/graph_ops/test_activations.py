"""sigmoid, tanh, reLU and softMax: forward against NumPy (float32, float64; reLU ints; extreme
inputs without overflow or warnings; unknown dims), gradients against central differences
(float64, first and second order), and errors naming the op and the label."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import FD_BOUND, FLOATS, INTS, fd_check, run_op

TOLERANCE = {rg.float32: 2e-7, rg.float64: 1e-15}


def reference_softmax(x, axis):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


REFERENCES = {
    "sigmoid": lambda x: 1 / (1 + np.exp(-np.asarray(x, np.float64))),
    "tanh": lambda x: np.tanh(np.asarray(x, np.float64)),
    "reLU": lambda x: np.maximum(x, 0),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op", REFERENCES)
def test_elementwise_forward(op, dtype, rng):
    x = rng.uniform(-4, 4, (3, 4)).astype(dtype.numpy)
    got = run_op(lambda g, t: getattr(g, op)(t["x"]), {"x": x}, dtype, {"x": (None, 4)})
    assert got.dtype == dtype.numpy and got.shape == x.shape
    np.testing.assert_allclose(got, REFERENCES[op](x), rtol=TOLERANCE[dtype], atol=0)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_relu_integers(dtype):
    x = np.array([[-3, 0, 5]], dtype.numpy)
    got = run_op(lambda g, t: g.reLU(with_=t["x"]), {"x": x}, dtype)
    assert got.dtype == dtype.numpy and got.tolist() == [[0, 0, 5]]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_sigmoid_extremes(dtype):
    """No overflow warning at ±1000; tiny values keep their relative precision."""
    x = np.array([-1000.0, -80.0, -30.0, 0.0, 30.0, 1000.0], dtype.numpy)
    got = run_op(lambda g, t: g.sigmoid(t["x"]), {"x": x}, dtype)
    assert got[0] == 0 and got[3] == 0.5 and got[-1] == 1
    expected = np.exp(x[1:3].astype(np.float64))  # σ(x) = e^x (1 - e^x + ...) for x << 0
    if dtype == rg.float64:
        np.testing.assert_allclose(got[1:3], expected, rtol=1e-13)
    else:
        np.testing.assert_allclose(got[2], expected[1], rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_forward(dtype, axis, rng):
    x = rng.normal(0, 3, (2, 3, 4)).astype(dtype.numpy)
    got = run_op(lambda g, t: g.softMax(t["x"], axis=axis), {"x": x}, dtype, {"x": (None, 3, None)})
    assert got.dtype == dtype.numpy and got.shape == x.shape
    np.testing.assert_allclose(got, reference_softmax(x, axis), rtol=4 * TOLERANCE[dtype], atol=0)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_is_stable(dtype):
    x = np.array([[1e4, 1e4 - 1, -1e4], [-1e30, 0.0, -np.inf]], dtype.numpy)
    got = run_op(lambda g, t: g.softMax(with_=t["x"], axis=1), {"x": x}, dtype)
    e = np.exp(-1.0)
    np.testing.assert_allclose(got[0], [1 / (1 + e), e / (1 + e), 0], rtol=1e-6)
    np.testing.assert_array_equal(got[1], [0, 1, 0])


@pytest.mark.parametrize("op", REFERENCES)
def test_elementwise_gradients(op, rng):
    x = rng.uniform(-2, 2, (2, 3))
    x = np.where(np.abs(x) < 0.05, 0.3, x)  # reLU's kink at 0
    assert fd_check(lambda g, t: getattr(g, op)(t["x"]), {"x": x}, rng, where=op) < FD_BOUND

    def second(g, t):
        y = getattr(g, op)(t["x"])
        loss = g.reductionSum(g.multiplication(y, g.square(t["x"])), axes=[0, 1])
        return g.gradients(of=loss, with_=[t["x"]])[t["x"]]

    assert fd_check(second, {"x": x}, rng, where=f"{op} second order") < FD_BOUND


@pytest.mark.parametrize("axis", [0, -1, 1])
def test_softmax_gradients(axis, rng):
    x = rng.normal(0, 1.5, (2, 3, 2))
    error = fd_check(
        lambda g, t: g.softMax(t["x"], axis=axis),
        {"x": x},
        rng,
        shapes={"x": (None, 3, None)},
        where=f"softMax axis={axis}",
    )
    assert error < FD_BOUND

    def second(g, t):
        y = g.softMax(t["x"], axis=axis)
        loss = g.reductionSum(g.multiplication(y, t["x"]), axes=[0, 1, 2])
        return g.gradients(of=loss, with_=[t["x"]])[t["x"]]

    assert fd_check(second, {"x": x}, rng, where=f"softMax axis={axis} second order") < FD_BOUND


def test_relu_gradient_is_zero_below_zero():
    g = rg.Graph()
    x = g.placeholder([4], rg.float64)
    grad = g.gradients(of=g.reLU(x), with_=[x])[x]
    got = g.run(feeds={x: np.array([-2.0, -0.5, 0.5, 2.0])}, targetTensors=[grad])[grad]
    np.testing.assert_array_equal(got, [0, 0, 1, 1])


@pytest.fixture
def graph():
    g = rg.Graph()
    g.f32 = g.placeholder([2, 3], rg.float32)
    g.i32 = g.placeholder([2, 3], rg.int32)
    return g


@pytest.mark.parametrize("op", ["sigmoid", "tanh", "reLU", "softMax"])
def test_errors(op, graph):
    g = graph
    kwargs = {"axis": 1} if op == "softMax" else {}
    method = getattr(g, op)
    with pytest.raises(TypeError, match=f"^{op}: with_: "):
        method("x", **kwargs)
    with pytest.raises(TypeError, match=f"^{op}: name: "):
        method(g.f32, name=2, **kwargs)
    if op != "reLU":
        with pytest.raises(
            TypeError, match=f"^{op}: with_: expected float32 or float64, got int32"
        ):
            method(g.i32, **kwargs)


def test_softmax_axis_errors(graph):
    g = graph
    with pytest.raises(ValueError, match="^softMax: axis: axis 2 is out of range for rank 2"):
        g.softMax(g.f32, axis=2)
    with pytest.raises(ValueError, match="^softMax: axis: "):
        g.softMax(g.f32, axis=-3)
    with pytest.raises(TypeError, match="^softMax: axis: expected an int axis"):
        g.softMax(g.f32, axis=1.0)
    with pytest.raises(TypeError, match="^softMax: axis: expected an int axis"):
        g.softMax(g.f32, axis=None)
