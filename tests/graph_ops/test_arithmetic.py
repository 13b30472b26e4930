"""addition, subtraction, multiplication, division, matrixMultiplication, square, squareRoot,
exponent, logarithm, negative, clamp and select: forward against NumPy (float32, float64 and
ints where they apply; broadcasting; unknown dims), gradients against central differences
(float64; broadcasting; second order), and every error naming the op and the label."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import ALL, FD_BOUND, FLOATS, draw, fd_check, refused_at_run, run_op

BINARY = {
    "addition": np.add,
    "subtraction": np.subtract,
    "multiplication": np.multiply,
    "division": np.true_divide,
}
PAIRS = [((2, 3), (2, 3)), ((2, 1, 3), (4, 1)), ((3,), ()), ((), (2, 2))]


def trunc_divide(a, b):
    return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype)


# --- forward ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", PAIRS, ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_forward(op, dtype, shapes, rng):
    a = draw(rng, shapes[0], dtype)
    b = draw(rng, shapes[1], dtype, away=0.5 if op == "division" else 0.0)
    got = run_op(lambda g, t: getattr(g, op)(t["a"], t["b"]), {"a": a, "b": b}, dtype)
    expected = (
        trunc_divide(*np.broadcast_arrays(a, b))
        if op == "division" and not dtype.is_float
        else BINARY[op](a, b)
    )
    assert got.dtype == dtype.numpy and got.shape == np.broadcast_shapes(a.shape, b.shape)
    np.testing.assert_array_equal(got, expected)


def test_integer_division_truncates_like_c():
    a = np.array([-7, 7, -7, 7, 6, -6, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, -5], np.int32)
    got = run_op(lambda g, t: g.division(t["a"], t["b"]), {"a": a, "b": b}, rg.int32)
    np.testing.assert_array_equal(got, [-3, 3, 3, -3, 2, -2, 0])


def test_numbers_take_the_tensor_type(rng):
    x = draw(rng, (2, 3), rg.float32)
    got = run_op(lambda g, t: g.subtraction(2, g.multiplication(t["x"], 0.5)), {"x": x}, rg.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, np.float32(2) - x * np.float32(0.5))
    i = np.array([[1, -2, 3]], np.int64)
    got = run_op(lambda g, t: g.addition(t["i"], 4), {"i": i}, rg.int64)
    assert got.dtype == np.int64 and got.tolist() == [[5, 2, 7]]


def test_numbers_beside_an_array_take_the_arrays_type():
    """docs/training.md: Python numbers, and lists or tuples of them, take the other operand's
    dataType, whether that operand is a Tensor or a NumPy array."""
    g = rg.Graph()
    f32, i32 = np.ones(2, np.float32), np.ones(2, np.int32)
    made = {
        "multiplication": g.multiplication(f32, 2.0),
        "clamp": g.clamp(np.array([0.5, 2.0], np.float32), min=0, max=1),
        "select": g.select(np.array([1.0, 0.0], np.float32), trueTensor=f32, falseTensor=0),
        "addition": g.addition(i32, 1),
        "concatTensors": g.concatTensors([f32, [1.0]], dimension=0),
    }
    out = g.run(feeds={}, targetTensors=list(made.values()))
    got = {name: out[t] for name, t in made.items()}
    expected = {"multiplication": np.float32([2, 2]), "clamp": np.float32([0.5, 1]),
                "select": np.float32([1, 0]), "addition": np.int32([2, 2]),
                "concatTensors": np.float32([1, 1, 1])}
    for name, value in expected.items():
        assert got[name].dtype == value.dtype, name
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_python_lists_and_tuples_take_the_tensor_type_but_arrays_keep_theirs(rng):
    x = draw(rng, (2, 3), rg.float32)
    got = run_op(lambda g, t: g.addition(t["x"], [1.0, 2.0, 3.0]), {"x": x}, rg.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, x + np.float32([1, 2, 3]))
    i = np.array([[1, -2, 3]], np.int32)
    got = run_op(lambda g, t: g.multiplication(t["i"], (2, 3, 4)), {"i": i}, rg.int32)
    assert got.dtype == np.int32 and got.tolist() == [[2, -6, 12]]
    g = rg.Graph()
    ints = g.placeholder((3,), rg.int32)
    with pytest.raises(TypeError, match="^addition: secondaryTensor: .*expected integers"):
        g.addition(ints, [1.5, 2.0, 3.0])  # no silent truncation
    with pytest.raises(TypeError, match="^addition: secondaryTensor: expected dataType float32"):
        g.addition(g.placeholder((3,), rg.float32), np.ones(3))  # an array keeps float64


def test_unknown_dims_broadcast_at_run_time(rng):
    a, b = draw(rng, (4, 2, 3), rg.float64), draw(rng, (2, 1), rg.float64)
    got = run_op(
        lambda g, t: g.multiplication(t["a"], t["b"]),
        {"a": a, "b": b},
        shapes={"a": (None, 2, None), "b": (None, 1)},
    )
    np.testing.assert_array_equal(got, a * b)
    g = rg.Graph()
    x = g.placeholder([None, 3], rg.float64)
    assert g.addition(x, g.placeholder([2, 1, 1], rg.float64)).shape == (2, None, 3)


MATMUL = [
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (3, 3, 2)),
    ((1, 1), (1, 1)),
    # numpy.matmul's rank-1 operands: [K] as [1, K] (primary) or [K, 1] (secondary), dropped
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((5, 2, 3), (3,)),
    ((3,), (5, 3, 4)),
]


@pytest.mark.parametrize("shapes", MATMUL, ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_matrix_multiplication_forward(dtype, shapes, rng):
    a, b = draw(rng, shapes[0], dtype), draw(rng, shapes[1], dtype)
    got = run_op(
        lambda g, t: g.matrixMultiplication(primary=t["a"], secondary=t["b"]),
        {"a": a, "b": b},
        dtype,
    )
    expected = np.matmul(a, b)
    assert got.dtype == dtype.numpy and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == rg.float32 else 1e-14)


def test_matrix_multiplication_shapes_and_positional_use():
    g = rg.Graph()
    a = g.placeholder([None, 2, 3], rg.float32)
    b = g.placeholder([4, 1, 3, None], rg.float32)
    assert g.matrixMultiplication(a, b).shape == (4, None, 2, None)
    c = g.matrixMultiplication(a, b, name="product")
    assert c.name == "product"


UNARY = {
    "square": (np.square, -3, 3),
    "squareRoot": (np.sqrt, 0.1, 4),
    "exponent": (np.exp, -3, 3),
    "logarithm": (np.log, 0.1, 4),
    "negative": (np.negative, -3, 3),
}


@pytest.mark.parametrize(
    ("op", "dtype"),
    [(op, dtype) for op in UNARY for dtype in (ALL if op in ("square", "negative") else FLOATS)],
    ids=str,
)
def test_unary_forward(op, dtype, rng):
    """Ints for square and negative; the others take floats only (errors below)."""
    function, low, high = UNARY[op]
    x = draw(rng, (2, 3), dtype, low, high)
    got = run_op(lambda g, t: getattr(g, op)(t["x"]), {"x": x}, dtype)
    assert got.dtype == dtype.numpy
    np.testing.assert_array_equal(got, function(x))
    got = run_op(lambda g, t: getattr(g, op)(with_=t["x"]), {"x": x}, dtype, {"x": (None, 3)})
    np.testing.assert_array_equal(got, function(x))


def test_ieee_results_without_warnings():
    x = np.array([0.0, -1.0, 1000.0], np.float32)
    got = run_op(lambda g, t: g.logarithm(t["x"]), {"x": x}, rg.float32)
    assert got[0] == -np.inf and np.isnan(got[1])
    got = run_op(lambda g, t: g.exponent(t["x"]), {"x": x}, rg.float32)
    assert got[2] == np.inf
    got = run_op(lambda g, t: g.division(t["x"], 0.0), {"x": x}, rg.float32)
    assert np.isnan(got[0]) and got[1] == -np.inf


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_clamp_forward(dtype, rng):
    t, lo, hi = (
        draw(rng, (2, 3), dtype),
        draw(rng, (3,), dtype, -2, 0),
        draw(rng, (2, 1), dtype, 0, 2),
    )
    got = run_op(
        lambda g, x: g.clamp(x["t"], min=x["lo"], max=x["hi"]), {"t": t, "lo": lo, "hi": hi}, dtype
    )
    assert got.dtype == dtype.numpy
    np.testing.assert_array_equal(got, np.minimum(np.maximum(t, lo), hi))
    got = run_op(lambda g, x: g.clamp(x["t"], min=-1, max=1), {"t": t}, dtype)
    np.testing.assert_array_equal(got, np.clip(t, -1, 1))


@pytest.mark.parametrize("predicate_type", ALL, ids=str)
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_select_forward(dtype, predicate_type, rng):
    p = rng.integers(0, 2, (2, 1)).astype(predicate_type.numpy) * 3
    t, f = draw(rng, (2, 3), dtype), draw(rng, (3,), dtype)
    g = rg.Graph()
    P = g.placeholder([2, 1], predicate_type)
    T, F = g.placeholder([2, 3], dtype), g.placeholder([3], dtype)
    out = g.select(P, trueTensor=T, falseTensor=F)
    got = g.run(feeds={P: p, T: t, F: f}, targetTensors=[out])[out]
    assert got.dtype == dtype.numpy
    np.testing.assert_array_equal(got, np.where(p != 0, t, f))
    out = g.select(P, trueTensor=T, falseTensor=0)
    got = g.run(feeds={P: p, T: t}, targetTensors=[out])[out]
    np.testing.assert_array_equal(got, np.where(p != 0, t, 0))


# --- gradients ---------------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", PAIRS + [((2, 1, 3), (2, 3))], ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_binary_gradients(op, shapes, rng):
    a = draw(rng, shapes[0], rg.float64, away=0.5)
    b = draw(rng, shapes[1], rg.float64, away=0.5)
    error = fd_check(
        lambda g, t: getattr(g, op)(t["a"], t["b"]), {"a": a, "b": b}, rng, where=f"{op} {shapes}"
    )
    assert error < FD_BOUND


@pytest.mark.parametrize("op", BINARY)
def test_binary_gradients_unknown_dims(op, rng):
    """The broadcast operand's gradient is summed over axes known only at run time."""
    a, b = draw(rng, (3, 2, 2), rg.float64, away=0.5), draw(rng, (2, 1), rg.float64, away=0.5)
    error = fd_check(
        lambda g, t: getattr(g, op)(t["a"], t["b"]),
        {"a": a, "b": b},
        rng,
        shapes={"a": (None, 2, None), "b": (None, 1)},
        where=f"{op} unknown dims",
    )
    assert error < FD_BOUND


@pytest.mark.parametrize("op", ["division", "multiplication"])
def test_binary_second_order(op, rng):
    """The gradient ops are differentiable again: d/d(a, b) of sum(W ⊙ d(loss)/da)."""
    a, b = draw(rng, (2, 3), rg.float64, away=0.5), draw(rng, (3,), rg.float64, away=0.5)

    def build(g, t):
        out = getattr(g, op)(t["a"], t["b"])
        loss = g.reductionSum(g.multiplication(out, out), axes=[0, 1])
        return g.gradients(of=loss, with_=[t["a"]])[t["a"]]

    assert fd_check(build, {"a": a, "b": b}, rng, where=f"{op} second order") < FD_BOUND


@pytest.mark.parametrize("shapes", MATMUL, ids=str)
def test_matrix_multiplication_gradients(shapes, rng):
    a, b = draw(rng, shapes[0], rg.float64), draw(rng, shapes[1], rg.float64)
    error = fd_check(
        lambda g, t: g.matrixMultiplication(primary=t["a"], secondary=t["b"]),
        {"a": a, "b": b},
        rng,
        where=f"matrixMultiplication {shapes}",
    )
    assert error < FD_BOUND


def test_matrix_multiplication_gradients_unknown_dims_and_second_order(rng):
    a, b = draw(rng, (2, 2, 3), rg.float64), draw(rng, (3, 2), rg.float64)
    error = fd_check(
        lambda g, t: g.matrixMultiplication(t["a"], t["b"]),
        {"a": a, "b": b},
        rng,
        shapes={"a": (None, 2, 3), "b": (3, None)},
        where="matrixMultiplication unknown dims",
    )
    assert error < FD_BOUND

    def build(g, t):
        out = g.matrixMultiplication(t["a"], t["b"])
        loss = g.reductionSum(g.square(out), axes=[0, 1, 2])
        return g.gradients(of=loss, with_=[t["b"]])[t["b"]]

    assert (
        fd_check(build, {"a": a, "b": b}, rng, where="matrixMultiplication second order") < FD_BOUND
    )


@pytest.mark.parametrize("op", UNARY)
def test_unary_gradients(op, rng):
    _, low, high = UNARY[op]
    x = draw(rng, (2, 3), rg.float64, low, high)
    assert fd_check(lambda g, t: getattr(g, op)(t["x"]), {"x": x}, rng, where=op) < FD_BOUND

    def second(g, t):
        loss = g.reductionSum(g.multiplication(getattr(g, op)(t["x"]), t["x"]), axes=[0, 1])
        return g.gradients(of=loss, with_=[t["x"]])[t["x"]]

    assert fd_check(second, {"x": x}, rng, where=f"{op} second order") < FD_BOUND


def test_clamp_gradients(rng):
    """tensor, min and max tensors broadcast; every value at least 0.05 from a kink."""
    lo = np.array([-1.0, -0.6, -0.3])
    hi = np.array([[0.4], [0.9]])
    t = np.array([[-1.5, -0.2, 0.1], [0.7, 1.2, -0.8]])
    error = fd_check(
        lambda g, x: g.clamp(x["t"], min=x["lo"], max=x["hi"]),
        {"t": t, "lo": lo, "hi": hi},
        rng,
        where="clamp",
    )
    assert error < FD_BOUND
    # min > max: the result is max (MPSGraph's min(max(t, lo), hi)), its gradient goes there
    error = fd_check(
        lambda g, x: g.clamp(x["t"], min=x["lo"], max=x["hi"]),
        {"t": t, "lo": lo + 2, "hi": hi},
        rng,
        where="clamp min > max",
    )
    assert error < FD_BOUND


def test_clamp_gradient_passes_where_min_le_t_le_max():
    g = rg.Graph()
    t = g.placeholder([5], rg.float64)
    out = g.clamp(t, min=-1.0, max=1.0)
    grad = g.gradients(of=out, with_=[t])[t]
    got = g.run(feeds={t: np.array([-2.0, -1.0, 0.0, 1.0, 2.0])}, targetTensors=[grad])[grad]
    np.testing.assert_array_equal(got, [0, 1, 1, 1, 0])


def test_select_gradients(rng):
    p = np.array([[1.0], [0.0]])
    t, f = draw(rng, (2, 3), rg.float64), draw(rng, (3,), rg.float64)

    def build(g, x):
        return g.select(
            g.constant(p.astype(np.int32), dataType=rg.int32), trueTensor=x["t"], falseTensor=x["f"]
        )

    assert fd_check(build, {"t": t, "f": f}, rng, where="select") < FD_BOUND
    # a float predicate on the path gets no gradient (it is piecewise constant)
    g = rg.Graph()
    P, T = g.placeholder([2, 1], rg.float64), g.placeholder([2, 3], rg.float64)
    grads = g.gradients(of=g.select(P, trueTensor=T, falseTensor=0.0), with_=[P, T])
    got = g.run(feeds={P: p, T: t}, targetTensors=list(grads.values()))
    np.testing.assert_array_equal(got[grads[P]], np.zeros((2, 1)))
    np.testing.assert_array_equal(got[grads[T]], np.broadcast_to(p, (2, 3)))


def test_float32_gradients_stay_float32(rng):
    g = rg.Graph()
    a, b = g.placeholder([2, 3], rg.float32), g.placeholder([3], rg.float32)
    out = g.division(g.matrixMultiplication(a, g.constant(np.ones((3, 3)), dataType=rg.float32)), b)
    grads = g.gradients(of=out, with_=[a, b])
    got = g.run(
        feeds={a: np.ones((2, 3), np.float32), b: np.full(3, 2.0, np.float32)},
        targetTensors=list(grads.values()),
    )
    assert [v.dtype for v in got.values()] == [np.float32, np.float32]
    # d/db sum((a·1) / b) = -sum_rows(3) / b² = -2·3 / 4
    np.testing.assert_allclose(got[grads[b]], np.full(3, -1.5), rtol=1e-6)


# --- errors ------------------------------------------------------------------------------------


def tensors():
    g = rg.Graph()
    return (
        g,
        g.placeholder([2, 3], rg.float32),
        g.placeholder([2, 3], rg.float64),
        g.placeholder([2, 3], rg.int32),
    )


@pytest.mark.parametrize("op", BINARY)
def test_binary_errors(op):
    g, f32, f64, i32 = tensors()
    other = rg.Graph()
    cases = [
        (("x", f32), TypeError, "primaryTensor: "),
        ((f32, None), TypeError, "secondaryTensor: "),
        ((f32, f64), TypeError, "secondaryTensor: expected dataType float32"),
        ((i32, 2.5), TypeError, "secondaryTensor: value: expected integers"),
        ((i32, 2**40), ValueError, "secondaryTensor: value: values outside the range of int32"),
        ((f32, g.placeholder([4], rg.float32)), ValueError, "shapes do not broadcast: "),
        ((other.placeholder([2, 3], rg.float32), f32), ValueError, "primaryTensor: .*another"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=f"^{op}: {message}"):
            getattr(g, op)(*args)
    with pytest.raises(TypeError, match=f"^{op}: name: "):
        getattr(g, op)(f32, f32, name=3)


def test_integer_constants_and_variables_never_wrap_around():
    """An integer value outside the type's range is refused wherever an array enters the
    graph (a feed, a constant, a variable's initial value), never wrapped (2**40 as int32 is 0)."""
    g = rg.Graph()
    big = np.array([1, 2**40])
    with pytest.raises(ValueError, match="^constant: value: values outside the range of int32"):
        g.constant(big, dataType=rg.int32)
    with pytest.raises(ValueError, match="^variable: with_: values outside the range of int32"):
        g.variable(big, shape=(2,), dataType=rg.int32)
    x = g.placeholder([2], rg.int32)
    with pytest.raises(ValueError, match="feed for .*values outside the range of int32"):
        g.run(feeds={x: big}, targetTensors=[x])
    in_range = g.run(feeds={x: np.array([-(2**31), 2**31 - 1])}, targetTensors=[x])[x]
    np.testing.assert_array_equal(in_range, [-(2**31), 2**31 - 1])


def test_run_time_errors():
    g = rg.Graph()
    a, b = g.placeholder([None], rg.float32), g.placeholder([3], rg.float32)
    out = g.addition(a, b)
    refused_at_run(
        g,
        r"^addition: shapes do not broadcast at run time: "
        r"primaryTensor \[2\], secondaryTensor \[3\]",
        {a: np.ones(2, np.float32), b: np.ones(3, np.float32)},
        [out],
    )
    i, j = g.placeholder([2], rg.int32), g.placeholder([2], rg.int32)
    out = g.division(i, j)
    refused_at_run(
        g, "^division: secondaryTensor: integer division by zero", {i: [1, 2], j: [1, 0]}, [out]
    )
    m, n = g.placeholder([2, None], rg.float32), g.placeholder([3, 2], rg.float32)
    out = g.matrixMultiplication(m, n)
    refused_at_run(
        g,
        r"^matrixMultiplication: shapes do not match at run time: primary \[2, 2\], "
        r"secondary \[3, 2\]",
        {m: np.ones((2, 2), np.float32), n: np.ones((3, 2), np.float32)},
        [out],
    )


BUILD_ERRORS = (
    [
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication("x", f),
            TypeError,
            "primary: ",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(primary=f, secondary=[["a"]]),
            TypeError,
            "secondary: ",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(2.0, f),
            ValueError,
            "primary: expected rank >= 1",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(f, g.placeholder([2], rg.float32)),
            ValueError,
            r"secondary: expected \[\.\.\., 3, N\] or \[3\] to match primary \[2, 3\], got \[2\]",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(g.placeholder([3], rg.float32), f),
            ValueError,
            r"secondary: expected \[\.\.\., 3, N\] or \[3\] to match primary \[3\]",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(
                g.placeholder([3], rg.float32), g.placeholder([3], rg.float32), name=1
            ),
            TypeError,
            "name: ",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(f, f),
            ValueError,
            r"secondary: expected \[\.\.\., 3, N\]",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(f, g.placeholder([3, 2], rg.float64)),
            TypeError,
            "secondary: expected dataType",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(
                g.placeholder([2, 2, 3], rg.float32), g.placeholder([3, 3, 2], rg.float32)
            ),
            ValueError,
            "shapes do not broadcast: ",
        ),
        (
            "matrixMultiplication",
            lambda g, f, d, i: g.matrixMultiplication(f, g.placeholder([3, 2], rg.float32), name=1),
            TypeError,
            "name: ",
        ),
        ("clamp", lambda g, f, d, i: g.clamp("x", min=0.0, max=1.0), TypeError, "tensor: "),
        ("clamp", lambda g, f, d, i: g.clamp(f, min="0", max=1.0), TypeError, "min: "),
        ("clamp", lambda g, f, d, i: g.clamp(f, min=0.0, max=None), TypeError, "max: "),
        (
            "clamp",
            lambda g, f, d, i: g.clamp(f, min=d, max=1.0),
            TypeError,
            "min: expected dataType float32",
        ),
        (
            "clamp",
            lambda g, f, d, i: g.clamp(i, min=0, max=f),
            TypeError,
            "max: expected dataType int32",
        ),
        (
            "clamp",
            lambda g, f, d, i: g.clamp(f, min=0.0, max=g.placeholder([2], rg.float32)),
            ValueError,
            "shapes do not broadcast: ",
        ),
        ("clamp", lambda g, f, d, i: g.clamp(f, min=0.0, max=1.0, name=1), TypeError, "name: "),
        (
            "select",
            lambda g, f, d, i: g.select("x", trueTensor=f, falseTensor=f),
            TypeError,
            "predicate: ",
        ),
        (
            "select",
            lambda g, f, d, i: g.select(i, trueTensor=None, falseTensor=f),
            TypeError,
            "trueTensor: ",
        ),
        (
            "select",
            lambda g, f, d, i: g.select(i, trueTensor=f, falseTensor="y"),
            TypeError,
            "falseTensor: ",
        ),
        (
            "select",
            lambda g, f, d, i: g.select(i, trueTensor=f, falseTensor=i),
            TypeError,
            "falseTensor: expected dataType float32",
        ),
        (
            "select",
            lambda g, f, d, i: g.select(
                g.placeholder([4, 1, 1], rg.int32),
                trueTensor=f,
                falseTensor=g.placeholder([3, 1, 1], rg.float32),
            ),
            ValueError,
            "shapes do not broadcast: ",
        ),
        (
            "select",
            lambda g, f, d, i: g.select(i, trueTensor=f, falseTensor=f, name=1),
            TypeError,
            "name: ",
        ),
    ]
    + [
        (op, lambda g, f, d, i, op=op, bad=bad: getattr(g, op)(bad), TypeError, "with_: ")
        for op in UNARY
        for bad in ("x", None)
    ]
    + [
        (op, lambda g, f, d, i, op=op: getattr(g, op)(f, name=1), TypeError, "name: ")
        for op in UNARY
    ]
    + [
        (
            op,
            lambda g, f, d, i, op=op: getattr(g, op)(i),
            TypeError,
            "with_: expected float32 or float64, got int32",
        )
        for op in ("squareRoot", "exponent", "logarithm")
    ]
)


@pytest.mark.parametrize(
    ("op", "build", "error", "message"), BUILD_ERRORS, ids=[f"{c[0]}-{c[3]}" for c in BUILD_ERRORS]
)
def test_build_errors(op, build, error, message):
    g, f32, f64, i32 = tensors()
    with pytest.raises(error, match=f"^{op}: {message}"):
        build(g, f32, f64, i32)
