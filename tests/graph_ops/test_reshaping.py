"""reshape, transpose, transposeTensor, sliceTensor, concatTensors, expandDims, squeeze and
cast: forward against NumPy in the four data types (with dimensions unknown until run time),
every gradient rule (and the internal kinds' rules, through gradients of gradients) against
central differences, and every error per op and label."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import ALL, FD_BOUND, draw, fd_check, run_op


def check(result, expected, dtype):
    assert result.dtype == dtype.numpy and result.shape == expected.shape
    assert result.flags.c_contiguous and result.flags.writeable
    np.testing.assert_array_equal(result, expected.astype(dtype.numpy))


# --- forward -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize(
    "shape, placeholder, new, inferred",
    [
        ((2, 3, 4), (2, 3, 4), (6, -1), (6, 4)),
        ((2, 3, 4), (2, 3, 4), (-1,), (24,)),
        ((2, 3, 4), (None, 3, 4), (-1, 12), (None, 12)),
        ((2, 3, 4), (None, 3, None), (4, 6), (4, 6)),
        ((0, 3), (None, 3), (-1, 3), (None, 3)),
    ],
    ids=["[6,-1]", "[-1]", "unknown[-1,12]", "unknown[4,6]", "empty"],
)
def test_reshape(rng, dtype, shape, placeholder, new, inferred):
    x = draw(rng, shape, dtype, -9, 9)
    g = rg.Graph()
    t = g.placeholder(placeholder, dtype)
    out = g.reshape(t, shape=new)
    assert out.shape == inferred and out.dataType == dtype
    result = g.run(feeds={t: x}, targetTensors=[out])[out]
    check(result, x.reshape(new), dtype)
    assert not np.shares_memory(result, x)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_transposes(rng, dtype):
    x = draw(rng, (2, 3, 4), dtype, -9, 9)
    g = rg.Graph()
    t = g.placeholder((None, 3, 4), dtype)
    full = g.transpose(t, permutation=[2, 0, 1])
    negative = g.transpose(t, permutation=[-1, 1, 0])
    swapped = g.transposeTensor(t, dimension=0, withDimension=-1)
    assert full.shape == (4, None, 3) and swapped.shape == (4, 3, None)
    r = g.run(feeds={t: x}, targetTensors=[full, negative, swapped])
    check(r[full], np.transpose(x, (2, 0, 1)), dtype)
    check(r[negative], np.transpose(x, (2, 1, 0)), dtype)
    check(r[swapped], np.swapaxes(x, 0, 2), dtype)


@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("placeholder", [(3, 5, 2), (3, None, 2)], ids=["known", "unknown"])
def test_slice_tensor(rng, dtype, placeholder):
    x = draw(rng, (3, 5, 2), dtype, -9, 9)
    g = rg.Graph()
    t = g.placeholder(placeholder, dtype)
    outs = [
        g.sliceTensor(t, dimension=1, start=1, length=3),
        g.sliceTensor(t, dimension=-2, start=-2, length=2),
        g.sliceTensor(t, dimension=1, start=5, length=0),
        g.sliceTensor(t, dimension=0, start=0, length=3),
    ]
    assert [o.shape for o in outs] == [(3, 3, 2), (3, 2, 2), (3, 0, 2), (3,) + placeholder[1:]]
    r = g.run(feeds={t: x}, targetTensors=outs)
    for out, expected in zip(outs, [x[:, 1:4], x[:, 3:5], x[:, 5:5], x]):
        check(r[out], expected, dtype)
    assert not np.shares_memory(r[outs[3]], x)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_concat_tensors(rng, dtype):
    a, b, c = (draw(rng, s, dtype, -9, 9) for s in [(2, 3, 4), (2, 1, 4), (2, 2, 4)])
    g = rg.Graph()
    ta = g.placeholder((2, None, 4), dtype)
    tb, tc = g.constant(b, dataType=dtype), g.placeholder((None, 2, 4), dtype)
    out = g.concatTensors([ta, tb, tc], dimension=1)
    last = g.concatTensors([ta, ta], dimension=-1)
    assert out.shape == (2, None, 4) and last.shape == (2, None, 8)
    r = g.run(feeds={ta: a, tc: c}, targetTensors=[out, last])
    check(r[out], np.concatenate([a, b, c], axis=1), dtype)
    check(r[last], np.concatenate([a, a], axis=-1), dtype)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_concat_tensors_broadcasts_the_other_dimensions(rng, dtype):
    """MPSGraph: the inputs broadcast along every dimension but the joined one."""
    a, b = draw(rng, (1, 2, 4), dtype, -9, 9), draw(rng, (3, 5, 1), dtype, -9, 9)
    out = run_op(
        lambda g, t: g.concatTensors([t["a"], t["b"]], dimension=1), {"a": a, "b": b}, dtype
    )
    expected = np.concatenate([np.broadcast_to(a, (3, 2, 4)), np.broadcast_to(b, (3, 5, 4))], 1)
    check(out, expected, dtype)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_expand_dims_and_squeeze(rng, dtype):
    x = draw(rng, (2, 1, 3), dtype, -9, 9)
    g = rg.Graph()
    t = g.placeholder((None, 1, 3), dtype)
    outs = {
        "axis0": (g.expandDims(t, axis=0), (1, None, 1, 3), x[None]),
        "axis-1": (g.expandDims(t, axis=-1), (None, 1, 3, 1), x[..., None]),
        "axes": (g.expandDims(t, axes=[0, -1]), (1, None, 1, 3, 1), x[None, ..., None]),
        "one int under axes": (g.expandDims(t, axes=-1), (None, 1, 3, 1), x[..., None]),
        "squeeze one int under axes": (g.squeeze(t, axes=1), (None, 3), x[:, 0]),
        "squeeze": (g.squeeze(t, axis=1), (None, 3), x[:, 0]),
        "squeeze-1": (g.squeeze(t, axis=-2), (None, 3), x[:, 0]),
        "squeeze axes": (
            g.squeeze(g.expandDims(t, axes=[0, 4]), axes=[0, 2, -1]),
            (None, 3),
            x[:, 0],
        ),
    }
    r = g.run(feeds={t: x}, targetTensors=[o for o, _, _ in outs.values()])
    for label, (out, shape, expected) in outs.items():
        assert out.shape == shape, label
        check(r[out], expected, dtype)
    known = run_op(lambda g, t: g.squeeze(t["x"]), {"x": x[None]}, dtype)  # all size-1 dims
    check(known, x[:, 0], dtype)


@pytest.mark.parametrize("source", ALL, ids=str)
@pytest.mark.parametrize("target", ALL, ids=str)
def test_cast(rng, source, target):
    x = draw(rng, (3, 4), source, -9, 9) * (np.float32(1.7) if source.is_float else 1)
    g = rg.Graph()
    t = g.placeholder((None, 4), source)
    out = g.cast(t, to=target.numpy if source == rg.int32 else target)  # a dtype works too
    assert out.dataType == target and out.shape == (None, 4)
    result = g.run(feeds={t: x}, targetTensors=[out])[out]
    check(result, np.trunc(x) if source.is_float and not target.is_float else x, target)
    assert not np.shares_memory(result, x)


def test_cast_truncates_toward_zero_and_refuses_what_has_no_value():
    x = np.array([2.7, -2.7, 0.5, -0.5, 2147483520.0, -2147483648.0], np.float32)
    np.testing.assert_array_equal(
        run_op(lambda g, t: g.cast(t["x"], to=rg.int32), {"x": x}, rg.float32),
        [2, -2, 0, 0, 2147483520, -2147483648],
    )
    for bad in (np.nan, np.inf, -np.inf, 2.0**31, -(2.0**31) - 1):
        with pytest.raises(ValueError, match=r"^cast: tensor \('c'\): .* has no int32 value"):
            run_op(lambda g, t: g.cast(t["x"], to=rg.int32, name="c"), {"x": np.array([1.0, bad])})
    with pytest.raises(ValueError, match=r"^cast: tensor: 2147483648 has no int32 value"):
        run_op(lambda g, t: g.cast(t["x"], to=rg.int32), {"x": np.array([2**31])}, rg.int64)
    assert (
        run_op(lambda g, t: g.cast(t["x"], to=rg.float32), {"x": np.array([1e300])})[0] == np.inf
    )  # float64 -> float32 overflows to inf, as IEEE says


# --- gradients -----------------------------------------------------------------------------


def small(rng, *shape):
    return rng.standard_normal(shape)


@pytest.mark.parametrize(
    "build, inputs, shapes",
    [
        (lambda g, t: g.reshape(t["x"], shape=[3, -1]), {"x": (2, 3, 2)}, None),
        (lambda g, t: g.reshape(t["x"], shape=[-1, 2]), {"x": (2, 3, 2)}, {"x": (None, 3, 2)}),
        (lambda g, t: g.transpose(t["x"], permutation=[1, 2, 0]), {"x": (2, 3, 4)}, None),
        (
            lambda g, t: g.transposeTensor(t["x"], dimension=2, withDimension=0),
            {"x": (2, 3, 4)},
            {"x": (None, 3, 4)},
        ),
        (
            lambda g, t: g.sliceTensor(t["x"], dimension=1, start=1, length=2),
            {"x": (2, 4, 2)},
            None,
        ),
        (
            lambda g, t: g.sliceTensor(t["x"], dimension=-2, start=-3, length=2),
            {"x": (2, 4, 2)},
            {"x": (2, None, 2)},
        ),
        (
            lambda g, t: g.concatTensors([t["x"], t["y"], t["x"]], dimension=1),
            {"x": (2, 3, 2), "y": (2, 1, 2)},
            None,
        ),
        (
            lambda g, t: g.concatTensors([t["x"], t["y"]], dimension=0),
            {"x": (2, 3, 2), "y": (1, 3, 2)},
            {"x": (None, 3, 2)},
        ),
        (
            lambda g, t: g.concatTensors([t["x"], t["y"]], dimension=-1),  # y broadcasts
            {"x": (2, 3, 2), "y": (1, 3, 1)},
            None,
        ),
        (lambda g, t: g.expandDims(t["x"], axes=[0, 3]), {"x": (2, 3)}, {"x": (None, 3)}),
        (lambda g, t: g.squeeze(t["x"], axes=[0, 2]), {"x": (1, 3, 1, 2)}, {"x": (None, 3, 1, 2)}),
        (lambda g, t: g.squeeze(t["x"]), {"x": (2, 1, 3)}, None),
        (lambda g, t: g.cast(t["x"], to=rg.float64), {"x": (2, 3)}, None),
    ],
    ids=[
        "reshape",
        "reshape-unknown",
        "transpose",
        "transposeTensor-unknown",
        "slice",
        "slice-unknown",
        "concat",
        "concat-unknown",
        "concat-broadcast",
        "expandDims",
        "squeeze-axes",
        "squeeze-all",
        "cast-float64",
    ],
)
def test_gradient(rng, request, build, inputs, shapes):
    arrays = {label: small(rng, *shape) for label, shape in inputs.items()}
    error = fd_check(build, arrays, rng, shapes=shapes, where=request.node.callspec.id)
    assert error < FD_BOUND


def second_order(op):
    """``d(sum(op(x) * v))/dx`` as a function of ``v``: the op's internal gradient kind,
    whose own rule the fd_check then exercises."""

    def build(g, t):
        loss = g.reductionSum(g.multiplication(op(g, t["x"]), t["v"]), axes=[0, 1, 2])
        return g.gradients(of=loss, with_=[t["x"]])[t["x"]]

    return build


@pytest.mark.parametrize(
    "op, v_shape, shapes",
    [
        (
            lambda g, x: g.sliceTensor(x, dimension=1, start=1, length=2),
            (2, 2, 2),
            {"x": (2, None, 2)},
        ),
        (lambda g, x: g.concatTensors([x, x], dimension=1), (2, 6, 2), {"x": (2, None, 2)}),
        (lambda g, x: g.reshape(x, shape=[-1, 3, 2]), (2, 3, 2), {"x": (None, 3, 2)}),
    ],
    ids=["sliceTensorGradient", "concatTensorsGradient", "reshapeLike"],
)
def test_gradient_of_gradient(rng, request, op, v_shape, shapes):
    arrays = {"x": small(rng, 2, 3, 2), "v": small(rng, *v_shape)}
    assert (
        fd_check(second_order(op), arrays, rng, shapes=shapes, where=request.node.callspec.id)
        < FD_BOUND
    )


@pytest.mark.parametrize(
    "source, middle",
    [(rg.float32, rg.float64), (rg.float64, rg.float32)],
    ids=["float32-float64", "float64-float32"],
)
def test_cast_gradient_is_cast_back(rng, source, middle):
    x, w = small(rng, 2, 3).astype(source.numpy), small(rng, 2, 3)
    g = rg.Graph()
    t = g.placeholder((2, 3), source)
    y = g.cast(t, to=middle)
    loss = g.reductionSum(g.multiplication(y, g.constant(w, dataType=middle)), axes=[0, 1])
    grad = g.gradients(of=loss, with_=[t])[t]
    assert grad.dataType == source
    result = g.run(feeds={t: x}, targetTensors=[grad])[grad]
    assert result.dtype == source.numpy
    np.testing.assert_allclose(result, w.astype(middle.numpy).astype(source.numpy), rtol=1e-6)


def test_integer_cast_paths_carry_no_gradient(rng):
    x = small(rng, 2, 3) * 5
    g = rg.Graph()
    t = g.placeholder((2, 3), rg.float64)
    y = g.cast(g.cast(t, to=rg.int32), to=rg.float64)
    loss = g.reductionSum(g.addition(g.multiplication(y, t), t), axes=[0, 1])
    grad = g.gradients(of=loss, with_=[t])[t]
    result = g.run(feeds={t: x}, targetTensors=[grad])[grad]
    np.testing.assert_allclose(result, np.trunc(x) + 1)  # d/dx of trunc(x)*x + x, trunc fixed


# --- errors --------------------------------------------------------------------------------


def graph_with(shape=(2, 3, 4), dtype=rg.float32):
    g = rg.Graph()
    return g, g.placeholder(shape, dtype)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda g, x: g.reshape("x", shape=[24]), TypeError, "reshape: tensor: "),
        (lambda g, x: g.reshape(x, shape=5), TypeError, "reshape: shape: expected a sequence"),
        (lambda g, x: g.reshape(x, shape=[2.0, 12]), TypeError, "reshape: shape: expected an int"),
        (
            lambda g, x: g.reshape(x, shape=[-2, 12]),
            ValueError,
            "reshape: shape: expected an int >=",
        ),
        (lambda g, x: g.reshape(x, shape=[-1, -1]), ValueError, "reshape: shape: at most one -1"),
        (
            lambda g, x: g.reshape(x, shape=[5, 5]),
            ValueError,
            r"reshape: shape: cannot reshape \[2",
        ),
        (lambda g, x: g.reshape(x, shape=[5, -1]), ValueError, "reshape: shape: cannot reshape"),
        (lambda g, x: g.transpose(x, permutation=[0, 1]), ValueError, "transpose: permutation: "),
        (
            lambda g, x: g.transpose(x, permutation=[0, 1, 1]),
            ValueError,
            "transpose: permutation: repeated",
        ),
        (
            lambda g, x: g.transpose(x, permutation=[0, 1, 3]),
            ValueError,
            "transpose: permutation: axis 3 is out of range",
        ),
        (lambda g, x: g.transpose(x, permutation=0), ValueError, "transpose: permutation: "),
        (lambda g, x: g.transpose(None, permutation=[0]), TypeError, "transpose: tensor: "),
        (
            lambda g, x: g.transposeTensor(x, dimension=3, withDimension=0),
            ValueError,
            "transposeTensor: dimension: ",
        ),
        (
            lambda g, x: g.transposeTensor(x, dimension=0, withDimension=1.0),
            TypeError,
            "transposeTensor: withDimension: ",
        ),
        (
            lambda g, x: g.sliceTensor(x, dimension=3, start=0, length=1),
            ValueError,
            "sliceTensor: dimension: ",
        ),
        (
            lambda g, x: g.sliceTensor(x, dimension=1, start=4, length=0),
            ValueError,
            "sliceTensor: start: 4 is out of range",
        ),
        (
            lambda g, x: g.sliceTensor(x, dimension=1, start=-4, length=1),
            ValueError,
            "sliceTensor: start: ",
        ),
        (
            lambda g, x: g.sliceTensor(x, dimension=1, start=1, length=3),
            ValueError,
            "sliceTensor: length: 3 entries from 1 pass the end",
        ),
        (
            lambda g, x: g.sliceTensor(x, dimension=1, start=0, length=-1),
            ValueError,
            "sliceTensor: length: ",
        ),
        (
            lambda g, x: g.sliceTensor(x, dimension=1, start=True, length=1),
            TypeError,
            "sliceTensor: start: ",
        ),
        (lambda g, x: g.concatTensors(x, dimension=0), TypeError, "concatTensors: tensors: "),
        (lambda g, x: g.concatTensors([], dimension=0), ValueError, "concatTensors: tensors: "),
        (
            lambda g, x: g.concatTensors([x, "y"], dimension=0),
            TypeError,
            "concatTensors: tensors/1: ",
        ),
        (
            lambda g, x: g.concatTensors([x, g.placeholder((2, 3, 4), rg.float64)], dimension=0),
            TypeError,
            "concatTensors: tensors/1: expected dataType float32",
        ),
        (
            lambda g, x: g.concatTensors([x, g.placeholder((2, 3))], dimension=0),
            ValueError,
            "concatTensors: tensors/1: expected rank 3",
        ),
        (
            lambda g, x: g.concatTensors([x, g.placeholder((2, 2, 4))], dimension=0),
            ValueError,
            "concatTensors: tensors/1: does not broadcast",
        ),
        (
            lambda g, x: g.concatTensors([x, x], dimension=-4),
            ValueError,
            "concatTensors: dimension: ",
        ),
        (lambda g, x: g.expandDims(x), TypeError, "expandDims: axis: expected axis= or axes="),
        (lambda g, x: g.expandDims(x, axis=0, axes=[1]), TypeError, "expandDims: axes: give"),
        (lambda g, x: g.expandDims(x, axis=4), ValueError, "expandDims: axis: axis 4 is out of"),
        (lambda g, x: g.expandDims(x, axis=[0]), TypeError, "expandDims: axis: expected an int"),
        (lambda g, x: g.expandDims(x, axes=[0, -5]), ValueError, "expandDims: axes: "),
        (lambda g, x: g.expandDims(x, axes=[0, -5 + 5]), ValueError, "expandDims: axes: repeated"),
        (lambda g, x: g.expandDims(x, axes=3.0), TypeError, "expandDims: axes: expected a sequence"),
        (
            lambda g, x: g.squeeze(x, axis=1),
            ValueError,
            r"squeeze: axis: dimension 1 of \[2, 3, 4\] has size 3, not 1",
        ),
        (lambda g, x: g.squeeze(x, axes=[0, 5]), ValueError, "squeeze: axes: "),
        (lambda g, x: g.squeeze(x, axis=0, axes=[0]), TypeError, "squeeze: axes: give"),
        (
            lambda g, x: g.squeeze(g.placeholder((None, 1))),
            ValueError,
            r"squeeze: tensor: shape \[\?, 1\] has unknown dimensions",
        ),
        (lambda g, x: g.cast(x, to=np.float16), TypeError, "cast: to: "),
        (lambda g, x: g.cast(x, to=None), TypeError, "cast: to: "),
        (lambda g, x: g.cast([1j], to=rg.float32), TypeError, "cast: tensor: "),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_build_errors(call, error, message):
    g, x = graph_with()
    with pytest.raises(error, match="^" + message):
        call(g, x)


@pytest.mark.parametrize(
    "call, shape, feed, message",
    [
        (
            lambda g, x: g.reshape(x, shape=[5, -1], name="op"),
            (None, 3),
            (3, 3),
            r"reshape: shape \('op'\): cannot reshape \[3, 3\] \(9 elements\) to \[5, -1\]",
        ),
        (
            lambda g, x: g.reshape(x, shape=[4, 2], name="op"),
            (None, 3),
            (3, 3),
            r"reshape: shape \('op'\): ",
        ),
        (
            lambda g, x: g.sliceTensor(x, dimension=0, start=1, length=3, name="op"),
            (None, 3),
            (3, 3),
            r"sliceTensor: length \('op'\): 3 entries from 1 pass the end of a dimension of",
        ),
        (
            lambda g, x: g.sliceTensor(x, dimension=0, start=-4, length=1, name="op"),
            (None, 3),
            (3, 3),
            r"sliceTensor: start \('op'\): -4 is out of range",
        ),
        (
            lambda g, x: g.concatTensors(
                [x, g.constant(np.ones((2, 2), np.float32))], dimension=1, name="op"
            ),
            (None, 3),
            (3, 3),
            r"concatTensors: tensors/1 \('op'\): does not broadcast",
        ),
        (
            lambda g, x: g.squeeze(x, axis=0, name="op"),
            (None, 3),
            (2, 3),
            r"squeeze: axis \('op'\): dimension 0 of \[2, 3\] has size 2, not 1",
        ),
    ],
    ids=["reshape-1", "reshape", "slice-length", "slice-start", "concat", "squeeze"],
)
def test_run_time_errors(call, shape, feed, message):
    g, x = graph_with(shape)
    out = call(g, x)
    with pytest.raises(ValueError, match="^" + message):
        g.run(feeds={x: np.ones(feed, np.float32)}, targetTensors=[out])
