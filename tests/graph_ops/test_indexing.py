"""oneHot and gather: forward against NumPy (every data type, batch dimensions, dimensions
unknown until run time), gather's gradient (a scatter-add, repeated indices included) and its
own gradient against central differences, an embedding lookup trained through a reduction,
and every error per op and label."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import ALL, FD_BOUND, FLOATS, INTS, draw, fd_check, refused_at_run, run_op
from rnngraph.ops import indexing


def reference_one_hot(indices, depth, axis, on=1.0, off=0.0):
    """Loops: position j of the new axis is ``on`` where the index equals j."""
    out = np.full(indices.shape + (depth,), off)
    for index in np.ndindex(indices.shape):
        if 0 <= indices[index] < depth:
            out[index + (indices[index],)] = on
    return np.moveaxis(out, -1, axis)


def reference_gather(updates, indices, axis, batch):
    """MPSGraph's definition, one batch entry at a time: res[b] = take(updates[b],
    indices[b], axis - B)."""
    shape = updates.shape[:axis] + indices.shape[batch:] + updates.shape[axis + 1 :]
    out = np.zeros(shape, updates.dtype)
    for b in np.ndindex(updates.shape[:batch]):
        out[b] = np.take(updates[b], indices[b], axis=axis - batch)
    return out


# --- oneHot --------------------------------------------------------------------------------


@pytest.mark.parametrize("index_type", INTS, ids=str)
@pytest.mark.parametrize(
    "shape, axis",
    [((), -1), ((4,), -1), ((2, 3), -1), ((2, 3), 0), ((2, 3), 1), ((2, 3), -3)],
    ids=["scalar", "[4]", "[2,3]", "[2,3]-axis0", "[2,3]-axis1", "[2,3]-axis-3"],
)
def test_one_hot(rng, index_type, shape, axis):
    indices = rng.integers(-2, 7, shape).astype(index_type.numpy)  # some outside [0, 5)
    g = rg.Graph()
    t = g.placeholder(shape, index_type)
    out = g.oneHot(t, depth=5) if axis == -1 else g.oneHot(t, depth=5, axis=axis)
    assert out.dataType == rg.float32  # MPSGraph's default
    expected = reference_one_hot(indices, 5, axis)
    assert out.shape == expected.shape
    result = g.run(feeds={t: indices}, targetTensors=[out])[out]
    assert result.dtype == np.float32 and result.flags.c_contiguous
    np.testing.assert_array_equal(result, expected)


def test_one_hot_out_of_range_rows_are_all_off_value():
    """Negative and too-large indices match no position: a row of offValue (as MPSGraph)."""
    indices = np.array([0, 3, -1, 4, -4, 2], np.int32)
    result = run_op(lambda g, t: g.oneHot(t["i"], depth=4), {"i": indices}, rg.int32)
    np.testing.assert_array_equal(result.sum(axis=1), [1, 1, 0, 0, 0, 1])
    np.testing.assert_array_equal(result[[2, 3, 4]], 0)


@pytest.mark.parametrize(
    "dataType, on, off",
    [(rg.float64, 2.5, -1.0), (rg.int32, 7, -2), (rg.int64, 1, 0), (np.float32, 3, 0.5)],
    ids=["float64", "int32", "int64", "np.float32"],
)
def test_one_hot_data_type_and_values(dataType, on, off):
    indices = np.array([[1, 0], [2, 9]], np.int64)
    g = rg.Graph()
    t = g.placeholder((None, 2), rg.int64)
    out = g.oneHot(t, depth=3, axis=1, dataType=dataType, onValue=on, offValue=off)
    dtype = rg.DataType[
        np.dtype(dataType.numpy if isinstance(dataType, rg.DataType) else dataType).name
    ]
    assert out.dataType == dtype and out.shape == (None, 3, 2)
    result = g.run(feeds={t: indices}, targetTensors=[out])[out]
    assert result.dtype == dtype.numpy
    np.testing.assert_array_equal(result, reference_one_hot(indices, 3, 1, on, off))


def test_one_hot_gives_indices_no_gradient(rng):
    indices, x = np.array([0, 2, 1]), rng.standard_normal((3, 3))
    g = rg.Graph()
    i, t = g.placeholder((3,), rg.int32), g.placeholder((3, 3), rg.float64)
    hot = g.oneHot(i, depth=3, dataType=rg.float64)
    loss = g.reductionSum(g.multiplication(hot, t), axes=[0, 1])
    grads = g.gradients(of=loss, with_=[t, i])
    r = g.run(feeds={i: indices, t: x}, targetTensors=[grads[t], grads[i]])
    np.testing.assert_array_equal(r[grads[t]], np.eye(3)[indices])
    np.testing.assert_array_equal(r[grads[i]], 0)


# --- gather forward ------------------------------------------------------------------------

GATHERS = [  # updates shape, indices shape, axis, batchDimensions
    ((5, 3), (4,), 0, 0),
    ((5, 3), (2, 4), 0, 0),  # an embedding lookup [V, E] x [T, N] -> [T, N, E]
    ((2, 5, 3), (), 1, 0),
    ((2, 5, 3), (2, 2), -1, 0),
    ((2, 5, 3), (2, 4), 1, 1),
    ((2, 3, 5, 2), (2, 3, 4), 2, 2),
    ((2, 3, 5, 2), (2, 4, 1), 2, 1),
    ((2, 5), (2,), 1, 1),
]
GATHER_IDS = [
    "[5,3]x[4]",
    "embedding",
    "scalar-index",
    "axis-1",
    "batch1",
    "batch2",
    "batch1-axis2",
    "batch1-rank0-picks",
]


@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("index_type", INTS, ids=str)
@pytest.mark.parametrize("updates_shape, indices_shape, axis, batch", GATHERS, ids=GATHER_IDS)
def test_gather(rng, dtype, index_type, updates_shape, indices_shape, axis, batch):
    updates = draw(rng, updates_shape, dtype, -9, 9)
    n = updates_shape[axis]
    indices = rng.integers(0, n, indices_shape).astype(index_type.numpy)
    g = rg.Graph()
    u = g.placeholder(updates_shape, dtype)
    i = g.placeholder(indices_shape, index_type)
    out = g.gather(u, indicesTensor=i, axis=axis, batchDimensions=batch)
    expected = reference_gather(updates, indices, axis % len(updates_shape), batch)
    assert out.shape == expected.shape and out.dataType == dtype
    result = g.run(feeds={u: updates, i: indices}, targetTensors=[out])[out]
    assert result.dtype == dtype.numpy and result.flags.c_contiguous
    np.testing.assert_array_equal(result, expected)
    assert not np.shares_memory(result, updates)


def test_gather_with_unknown_dimensions(rng):
    updates, indices = rng.standard_normal((2, 5, 3)), rng.integers(0, 5, (2, 4))
    g = rg.Graph()
    u = g.placeholder((None, None, 3), rg.float64)
    i = g.placeholder((2, None), rg.int32)
    out = g.gather(u, indicesTensor=i, axis=1, batchDimensions=1)
    assert out.shape == (2, None, 3)  # the batch size known from the indices
    plain = g.gather(u, indicesTensor=[[0, 4]], axis=-2)  # a list: an int64 constant
    assert plain.shape == (None, 1, 2, 3)
    r = g.run(feeds={u: updates, i: indices}, targetTensors=[out, plain])
    np.testing.assert_array_equal(r[out], reference_gather(updates, indices, 1, 1))
    np.testing.assert_array_equal(r[plain], updates[:, [[0, 4]]])


@pytest.mark.parametrize("bad", [5, -1, 2**31 - 1], ids=["n", "-1", "int32-max"])
def test_gather_refuses_out_of_range_indices_at_run_time(rng, bad):
    g = rg.Graph()
    u = g.placeholder((None, 3), rg.float32)
    i = g.placeholder((None,), rg.int32)
    out = g.gather(u, indicesTensor=i, axis=0, name="embed")
    refused_at_run(
        g,
        rf"^gather: indicesTensor \('embed'\): index {bad} is out of range \[0, 5\) for axis 0",
        {u: np.ones((5, 3), np.float32), i: np.array([0, bad, 1], np.int32)},
        [out],
    )
    out = g.gather(u, indicesTensor=g.placeholder((2, 2), rg.int32), axis=1, batchDimensions=1)
    idx = out.op.inputs["indicesTensor"]
    refused_at_run(
        g,
        r"^gather: indicesTensor: batch dimensions \[2\] differ from the updates' \[5\]",
        {u: np.ones((5, 3), np.float32), idx: np.zeros((2, 2), np.int32)},
        [out],
    )


# --- gradients -----------------------------------------------------------------------------


def gather_build(indices, axis, batch, index_type=rg.int32):
    def build(g, t):
        i = g.constant(indices, dataType=index_type)
        return g.gather(t["updates"], indicesTensor=i, axis=axis, batchDimensions=batch)

    return build


@pytest.mark.parametrize(
    "updates_shape, indices, axis, batch, placeholder",
    [
        ((4, 3), [[0, 3], [3, 3], [1, 0]], 0, 0, None),  # repeated indices accumulate
        ((2, 4, 3), [1, 1, 2, 0, 1], 1, 0, (None, 4, 3)),
        ((2, 4, 3), [2, 2], -1, 0, None),
        ((2, 4, 3), [[3, 3, 0], [1, 2, 1]], 1, 1, (2, None, 3)),
        ((2, 3, 4, 2), [[[0, 0], [3, 1], [2, 2]], [[1, 1], [0, 3], [3, 3]]], 2, 2, None),
        ((2, 5), [3, 1], 1, 1, None),
    ],
    ids=[
        "embedding-repeats",
        "axis1-unknown",
        "axis-1",
        "batch1-unknown",
        "batch2",
        "batch1-one-pick",
    ],
)
def test_gather_gradient(rng, request, updates_shape, indices, axis, batch, placeholder):
    inputs = {"updates": rng.standard_normal(updates_shape)}
    shapes = {"updates": placeholder} if placeholder else None
    error = fd_check(
        gather_build(np.array(indices), axis, batch),
        inputs,
        rng,
        shapes=shapes,
        where=f"gather {request.node.callspec.id}",
    )
    assert error < FD_BOUND


def test_gather_gradient_is_a_scatter_add(rng):
    """The gradient to the updates, exactly: np.add.at of the incoming gradient."""
    table, weights = rng.standard_normal((5, 2)), rng.standard_normal((3, 2, 2))
    indices = np.array([[4, 4], [0, 4], [2, 2]])
    g = rg.Graph()
    t = g.placeholder((5, 2), rg.float64)
    out = g.gather(t, indicesTensor=g.constant(indices, dataType=rg.int64), axis=0)
    loss = g.reductionSum(g.multiplication(out, weights), axes=[0, 1, 2])
    grad = g.gradients(of=loss, with_=[t])[t]
    expected = np.zeros((5, 2))
    np.add.at(expected, indices.reshape(-1), weights.reshape(-1, 2))
    np.testing.assert_allclose(
        g.run(feeds={t: table}, targetTensors=[grad])[grad], expected, rtol=1e-14, atol=1e-14
    )


@pytest.mark.parametrize("bad", [np.inf, np.nan], ids=["inf", "nan"])
@pytest.mark.parametrize("rows", [4, indexing.FEW_TARGETS + 1], ids=["few-rows", "many-rows"])
def test_a_non_finite_gradient_stays_in_its_own_row(rows, bad):
    """A table of few rows takes the one-hot product, where 0·inf = NaN would reach every
    row: a non-finite slice goes only to the row it was gathered from, as np.add.at puts it."""
    g = rg.Graph()
    table = g.placeholder((rows, 1), rg.float64)
    picked = g.gather(table, indicesTensor=np.array([0], np.int32), axis=0)
    grad = g.gradients(of=g.multiplication(picked, np.array([[bad]])), with_=[table])[table]
    got = g.run(feeds={table: np.ones((rows, 1))}, targetTensors=[grad])[grad].ravel()
    np.testing.assert_array_equal(got, [bad] + [0.0] * (rows - 1))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize(
    "rows", [indexing.FEW_TARGETS, indexing.FEW_TARGETS + 1], ids=["by-product", "by-sort"]
)
def test_both_scatter_add_paths_agree_with_add_at(rng, rows, dtype):
    """Up to FEW_TARGETS rows the scatter-add is a product with a one-hot matrix, above it a
    sort; both against np.add.at (repeated and unused rows)."""
    indices = rng.integers(0, rows // 2, (300,)).astype(np.int32)
    weights = rng.standard_normal((300, 5)).astype(dtype.numpy)
    g = rg.Graph()
    t = g.placeholder((rows, 5), dtype)
    out = g.gather(t, indicesTensor=g.constant(indices, dataType=rg.int32), axis=0)
    grad = g.gradients(of=g.reductionSum(g.multiplication(out, weights), axes=[0, 1]), with_=[t])[t]
    expected = np.zeros((rows, 5))
    np.add.at(expected, indices, weights.astype(np.float64))
    result = g.run(feeds={t: np.zeros((rows, 5), dtype.numpy)}, targetTensors=[grad])[grad]
    assert result.dtype == dtype.numpy
    np.testing.assert_allclose(
        result,
        expected,
        rtol=1e-5 if dtype == rg.float32 else 1e-13,
        atol=1e-5 if dtype == rg.float32 else 1e-13,
    )


@pytest.mark.parametrize("indices_shape", [(0,), (2, 0)], ids=["[0]", "[2,0]"])
def test_gather_gradient_with_no_indices_is_zero(rng, indices_shape):
    g = rg.Graph()
    t = g.placeholder((2, 3), rg.float64)
    batch = len(indices_shape) - 1
    out = g.gather(
        t,
        indicesTensor=g.constant(np.zeros(indices_shape, int), dataType=rg.int32),
        axis=1,
        batchDimensions=batch,
    )
    assert out.shape == (2, 0)
    grad = g.gradients(of=out, with_=[t])[t]
    result = g.run(feeds={t: rng.standard_normal((2, 3))}, targetTensors=[grad])[grad]
    np.testing.assert_array_equal(result, np.zeros((2, 3)))


@pytest.mark.parametrize("placeholder", [(4, 3), (None, 3)], ids=["known", "unknown"])
def test_gather_gradient_of_gradient(rng, request, placeholder):
    """d(sum(gather(x) * v))/dx = scatter(v): its own gradient (to v) gathers again."""
    indices = np.array([[0, 3, 3], [2, 0, 0]])

    def build(g, t):
        out = g.gather(t["x"], indicesTensor=g.constant(indices, dataType=rg.int32), axis=0)
        loss = g.reductionSum(g.multiplication(out, t["v"]), axes=[0, 1, 2])
        return g.gradients(of=loss, with_=[t["x"]])[t["x"]]

    inputs = {"x": rng.standard_normal((4, 3)), "v": rng.standard_normal((2, 3, 3))}
    error = fd_check(
        build,
        inputs,
        rng,
        shapes={"x": placeholder},
        where=f"gatherGradient {request.node.callspec.id}",
    )
    assert error < FD_BOUND


def test_embedding_lookup_gradient(rng):
    """An embedding as gather [V, E] x [T, N] -> [T, N, E], then a reduction over E and a
    weighted sum: the table's gradient (rows hit several times, rows never hit) against
    central differences and against np.add.at."""
    V, E, T, N = 6, 3, 4, 2
    tokens = np.array([[1, 1], [4, 1], [0, 4], [1, 1]])  # rows 2, 3 and 5 never used

    def build(g, t):
        embedded = g.gather(
            t["table"],
            indicesTensor=g.constant(tokens, dataType=rg.int32),
            axis=0,
            batchDimensions=0,
        )
        assert embedded.shape == (T, N, E)
        squared = g.multiplication(embedded, embedded)
        return g.reductionSum(squared, axis=2)  # [T, N, 1]

    table = rng.standard_normal((V, E))
    assert fd_check(build, {"table": table}, rng, where="embedding lookup") < FD_BOUND
    g = rg.Graph()
    t = g.placeholder((V, E), rg.float64)
    loss = g.reductionSum(build(g, {"table": t}), axes=[0, 1, 2])
    grad = g.gradients(of=loss, with_=[t])[t]
    expected = np.zeros((V, E))
    np.add.at(expected, tokens.reshape(-1), 2 * table[tokens.reshape(-1)])
    np.testing.assert_allclose(
        g.run(feeds={t: table}, targetTensors=[grad])[grad], expected, rtol=1e-13
    )
    np.testing.assert_array_equal(expected[[2, 3, 5]], 0)


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda g, u, i: g.oneHot(u, depth=3),
            TypeError,
            "oneHot: withIndicesTensor: expected int32 or int64 indices, got float32",
        ),
        (lambda g, u, i: g.oneHot("i", depth=3), TypeError, "oneHot: withIndicesTensor: "),
        (lambda g, u, i: g.oneHot(i, depth=0), ValueError, "oneHot: depth: expected an int >= 1"),
        (lambda g, u, i: g.oneHot(i, depth=2.0), TypeError, "oneHot: depth: expected an int"),
        (lambda g, u, i: g.oneHot(i, depth=3, axis=3), ValueError, "oneHot: axis: axis 3 is out"),
        (lambda g, u, i: g.oneHot(i, depth=3, axis=-4), ValueError, "oneHot: axis: "),
        (lambda g, u, i: g.oneHot(i, depth=3, dataType=np.bool_), TypeError, "oneHot: dataType: "),
        (lambda g, u, i: g.oneHot(i, depth=3, onValue="1"), TypeError, "oneHot: onValue: "),
        (
            lambda g, u, i: g.oneHot(i, depth=3, dataType=rg.int32, onValue=1.5),
            ValueError,
            "oneHot: onValue: 1.5 is not a int32 value",
        ),
        (
            lambda g, u, i: g.oneHot(i, depth=3, dataType=rg.int32, offValue=2**31),
            ValueError,
            "oneHot: offValue: ",
        ),
        (
            lambda g, u, i: g.gather(None, indicesTensor=i, axis=0),
            TypeError,
            "gather: withUpdatesTensor: ",
        ),
        (
            lambda g, u, i: g.gather(u, indicesTensor=u, axis=0),
            TypeError,
            "gather: indicesTensor: expected int32 or int64 indices, got float32",
        ),
        (
            lambda g, u, i: g.gather(u, indicesTensor=[0.5], axis=0),
            TypeError,
            "gather: indicesTensor: ",
        ),
        (
            lambda g, u, i: g.gather(u, indicesTensor=i, axis=3),
            ValueError,
            "gather: axis: axis 3 is out of range for rank 3",
        ),
        (lambda g, u, i: g.gather(u, indicesTensor=i, axis=None), TypeError, "gather: axis: "),
        (
            lambda g, u, i: g.gather(u, indicesTensor=i, axis=1, batchDimensions=-1),
            ValueError,
            "gather: batchDimensions: ",
        ),
        (
            lambda g, u, i: g.gather(u, indicesTensor=i, axis=0, batchDimensions=1),
            ValueError,
            "gather: batchDimensions: 1 exceeds the axis 0",
        ),
        (
            lambda g, u, i: g.gather(
                u,
                indicesTensor=g.constant(np.zeros((4, 2), int), dataType=rg.int32),
                axis=1,
                batchDimensions=1,
            ),
            ValueError,
            r"gather: indicesTensor: batch dimension 0 has size 4, the updates' 2",
        ),
        (
            lambda g, u, i: g.gather(
                u,
                indicesTensor=g.constant(np.zeros(2, int), dataType=rg.int32),
                axis=2,
                batchDimensions=2,
            ),
            ValueError,
            "gather: batchDimensions: 2 ",
        ),
        (
            lambda g, u, i: g.gather(u, indicesTensor=i, axis=0, batchDimensions=True),
            TypeError,
            "gather: batchDimensions: ",
        ),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_errors(call, error, message):
    g = rg.Graph()
    u, i = g.placeholder((2, 5, 3)), g.placeholder((2, 4), rg.int32)
    with pytest.raises(error, match="^" + message):
        call(g, u, i)


# Sizes no array can hold: refused when built (graph.py, larger_than_any_array), so no run
# attempts an allocation (8 TiB would abort the sanitizer's run, .ci/sanitize.sh: ASan's
# malloc).
@pytest.mark.parametrize("depth", [2**62, 2**70])
def test_one_hot_of_a_depth_too_large_to_hold_is_refused_by_name(depth):
    """oneHot's output [2, depth] has more bytes than any array can: a MemoryError naming
    oneHot and the shape, at build time."""
    g = rg.Graph()
    with pytest.raises(MemoryError, match=rf"^oneHot: output .* shape \[2, {depth}\]: more "):
        g.oneHot(np.array([0, 1], np.int32), depth=depth)
