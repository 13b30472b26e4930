"""reductionSum and mean: forward against NumPy with the reduced axes kept as size 1 (float32,
float64, int32, int64; unknown dims), gradients against central differences (keep-dims
broadcast back, unknown dims, second order), and errors naming the op and the label."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import ALL, FD_BOUND, FLOATS, INTS, draw, fd_check, run_op

AXES = [
    {"axis": 0},
    {"axis": -1},
    {"axes": [1]},
    {"axes": (0, 2)},
    {"axes": [-1, 0, 1]},
    {"axes": []},
]


def reduced(kwargs):
    return tuple(kwargs["axes"]) if "axes" in kwargs else (kwargs["axis"],)


@pytest.mark.parametrize("kwargs", AXES, ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_reduction_sum_forward(dtype, kwargs, rng):
    x = draw(rng, (2, 3, 4), dtype)
    got = run_op(lambda g, t: g.reductionSum(t["x"], **kwargs), {"x": x}, dtype)
    expected = np.sum(x, axis=reduced(kwargs), keepdims=True, dtype=dtype.numpy)
    assert got.dtype == dtype.numpy and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == rg.float32 else 0)


@pytest.mark.parametrize("axes", [[0], [-1], [0, 2], [], [0, 1, 2]], ids=str)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_mean_forward(dtype, axes, rng):
    x = draw(rng, (2, 3, 4), dtype, 0.5, 3.0)  # no cancellation: the bound is relative only
    got = run_op(lambda g, t: g.mean(of=t["x"], axes=axes), {"x": x}, dtype)
    expected = np.mean(x.astype(np.float64), axis=tuple(axes), keepdims=True)
    assert got.dtype == dtype.numpy and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == rg.float32 else 1e-15)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_integer_mean_truncates_toward_zero(dtype):
    x = np.array([[-7, 0], [7, 0], [-6, 1], [5, 5]], dtype.numpy)
    got = run_op(lambda g, t: g.mean(t["x"], axes=[1]), {"x": x}, dtype)
    assert got.dtype == dtype.numpy
    assert got.tolist() == [[-3], [3], [-2], [5]]


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_integer_mean_of_a_sum_past_the_type_is_exact(dtype):
    """The sum of three 2**62 (or 2**30) passes the type's range, their mean does not: it is
    the exact truncated mean, as Python's integers compute it."""
    big = 2**62 if dtype == rg.int64 else 2**30
    x = np.array([[big, big, big], [-big, -big, 1 - big], [-7, 2, 0]], dtype.numpy)
    got = run_op(lambda g, t: g.mean(t["x"], axes=[1]), {"x": x}, dtype)
    totals = [sum(int(v) for v in row) for row in x]  # Python ints: no overflow
    exact = [abs(t) // 3 * (1 if t >= 0 else -1) for t in totals]  # truncated toward zero
    assert got.dtype == dtype.numpy and got.ravel().tolist() == exact == [big, 1 - big, -1]


def test_integer_sum_keeps_int32():
    """NumPy would sum int32 in int64; the op keeps its dataType (and wraps like it)."""
    x = np.array([2**30, 2**30, 5], np.int32)
    got = run_op(lambda g, t: g.reductionSum(t["x"], axis=0), {"x": x}, rg.int32)
    assert got.dtype == np.int32 and got.tolist() == [-(2**31) + 5]


def test_unknown_dims(rng):
    g = rg.Graph()
    x = g.placeholder([None, 3, None], rg.float64)
    s = g.reductionSum(x, axes=[0, 1])
    m = g.mean(x, axes=[2])
    assert s.shape == (1, 1, None) and m.shape == (None, 3, 1)
    value = draw(rng, (4, 3, 2), rg.float64)
    got = g.run(feeds={x: value}, targetTensors=[s, m])
    np.testing.assert_allclose(got[s], value.sum(axis=(0, 1), keepdims=True), rtol=1e-15)
    np.testing.assert_allclose(got[m], value.mean(axis=2, keepdims=True), rtol=1e-15)


def test_empty_mean_is_nan_silently():
    got = run_op(lambda g, t: g.mean(t["x"], axes=[1]), {"x": np.zeros((2, 0))})
    assert got.shape == (2, 1) and np.isnan(got).all()


@pytest.mark.parametrize("kwargs", AXES, ids=str)
def test_reduction_sum_gradients(kwargs, rng):
    x = rng.normal(size=(2, 3, 2))
    error = fd_check(
        lambda g, t: g.reductionSum(t["x"], **kwargs), {"x": x}, rng, where=f"reductionSum {kwargs}"
    )
    assert error < FD_BOUND


@pytest.mark.parametrize("axes", [[0], [-1], [0, 2], [], [0, 1, 2]], ids=str)
def test_mean_gradients(axes, rng):
    x = rng.normal(size=(2, 3, 2))
    error = fd_check(
        lambda g, t: g.mean(t["x"], axes=axes),
        {"x": x},
        rng,
        shapes={"x": (None, 3, None)},
        where=f"mean {axes}",
    )
    assert error < FD_BOUND


@pytest.mark.parametrize("op", ["reductionSum", "mean"])
def test_second_order_and_unknown_dims(op, rng):
    """Keep-dims results broadcast against their input (x - mean(x)), then squared: the
    gradient flows through the broadcast, and the gradient ops are differentiable again."""
    x = rng.normal(size=(3, 2))

    def reduce(g, t):
        return getattr(g, op)(t, axes=[0])

    def build(g, t):
        centered = g.subtraction(t["x"], reduce(g, t["x"]))
        loss = g.reductionSum(g.square(g.square(centered)), axes=[0, 1])
        return g.gradients(of=loss, with_=[t["x"]])[t["x"]]

    error = fd_check(build, {"x": x}, rng, shapes={"x": (None, 2)}, where=f"{op} second order")
    assert error < FD_BOUND


@pytest.fixture
def graph():
    g = rg.Graph()
    g.x = g.placeholder([2, 3], rg.float32)
    return g


def test_reduction_sum_errors(graph):
    g = graph
    with pytest.raises(
        TypeError, match="^reductionSum: axes: expected exactly one of axis= and axes=, got neither"
    ):
        g.reductionSum(g.x)
    with pytest.raises(TypeError, match="^reductionSum: axes: .*got both"):
        g.reductionSum(g.x, axis=0, axes=[1])
    with pytest.raises(TypeError, match="^reductionSum: with_: "):
        g.reductionSum("x", axis=0)
    with pytest.raises(ValueError, match="^reductionSum: axis: axis 2 is out of range"):
        g.reductionSum(g.x, axis=2)
    with pytest.raises(TypeError, match="^reductionSum: axis: expected an int axis"):
        g.reductionSum(g.x, axis=[0])
    with pytest.raises(ValueError, match="^reductionSum: axes: repeated axis"):
        g.reductionSum(g.x, axes=[1, -1])
    with pytest.raises(ValueError, match="^reductionSum: axes: axis -3 is out of range"):
        g.reductionSum(g.x, axes=[0, -3])
    with pytest.raises(TypeError, match="^reductionSum: axes: "):
        g.reductionSum(g.x, axes="01")
    # one int under axes= is one axis, as mean and NumPy take it
    assert g.reductionSum(g.x, axes=-1).shape == g.reductionSum(g.x, axis=1).shape == (2, 1)
    with pytest.raises(TypeError, match="^reductionSum: name: "):
        g.reductionSum(g.x, axis=0, name=0)


def test_mean_errors(graph):
    g = graph
    with pytest.raises(TypeError, match="^mean: of: "):
        g.mean(None, axes=[0])
    with pytest.raises(ValueError, match="^mean: axes: axis 5 is out of range"):
        g.mean(g.x, axes=[5])
    with pytest.raises(TypeError, match="^mean: axes: "):
        g.mean(g.x, axes=[0.0])
    with pytest.raises(ValueError, match="^mean: axes: repeated axis"):
        g.mean(g.x, axes=[0, 0])
    with pytest.raises(TypeError, match="^mean: name: "):
        g.mean(g.x, axes=[0], name=0)
    i = g.placeholder([2, 0], rg.int32)
    out = g.mean(i, axes=[1])
    with pytest.raises(ValueError, match="^mean: axes: the integer mean of no elements"):
        g.run(feeds={i: np.zeros((2, 0), np.int32)}, targetTensors=[out])
