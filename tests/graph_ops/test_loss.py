"""softMaxCrossEntropy and LossReductionType: forward against NumPy and against
torch.nn.functional.cross_entropy (one-hot and soft labels, mean and sum), stability with huge
logits, gradients for source and labels against central differences (every reduction,
unknown dims, second order), and errors naming the op and the label."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import FD_BOUND, FLOATS, fd_check, refused_at_run, run_op

R = rg.LossReductionType
OP = "softMaxCrossEntropy"


def reference(source, labels, axis, reduction):
    """-sum(labels · log softmax(source), axis) in float64, then the reduction."""
    x = np.asarray(source, np.float64)
    top = x.max(axis=axis, keepdims=True)
    log_p = x - top - np.log(np.exp(x - top).sum(axis=axis, keepdims=True))
    per = -(np.asarray(labels, np.float64) * log_p).sum(axis=axis, keepdims=True)
    return {R.none: per, R.sum: per.sum(), R.mean: per.mean()}[reduction]


def soft_labels(rng, shape, axis):
    p = rng.uniform(0.1, 1.0, shape)
    return p / p.sum(axis=axis, keepdims=True)


def one_hot(rng, shape, axis):
    classes = rng.integers(0, shape[axis], shape[:axis] + shape[axis + 1 :])
    return np.moveaxis(np.eye(shape[axis])[classes], -1, axis), classes


def loss_op(axis, reduction, spelling="reuctionType"):
    return lambda g, t: g.softMaxCrossEntropy(
        t["source"], labels=t["labels"], axis=axis, **{spelling: reduction}
    )


def test_reduction_type():
    assert R.axis is R.none and [m.name for m in R] == ["none", "sum", "mean"]
    assert R.none.value == 0 and R.sum.value == 1 and R.mean.value == 2
    assert rg.LossReductionType is R and "LossReductionType" in rg.__all__


@pytest.mark.parametrize("reduction", [R.none, R.axis, R.sum, R.mean], ids=str)
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_forward(dtype, axis, reduction, rng):
    shape = (3, 4, 2)
    source = rng.normal(0, 3, shape).astype(dtype.numpy)
    labels = soft_labels(rng, shape, axis).astype(dtype.numpy)
    got = run_op(loss_op(axis, reduction), {"source": source, "labels": labels}, dtype)
    expected = reference(source, labels, axis, reduction)
    assert got.dtype == dtype.numpy and got.shape == np.shape(expected)
    if reduction is R.none:
        assert got.shape == tuple(1 if i == axis % 3 else d for i, d in enumerate(shape))
    else:
        assert got.shape == ()  # Apple's header: "down to a scalar"
    np.testing.assert_allclose(got, expected, rtol=2e-6 if dtype == rg.float32 else 1e-14)


def test_reduction_type_alias_and_unknown_dims(rng):
    source, labels = rng.normal(size=(5, 3)), soft_labels(rng, (5, 3), 1)
    got = run_op(
        loss_op(-1, R.mean, "reductionType"),
        {"source": source, "labels": labels},
        shapes={"source": (None, 3), "labels": (None, None)},
    )
    np.testing.assert_allclose(got, reference(source, labels, 1, R.mean), rtol=1e-14)
    g = rg.Graph()
    s, lab = g.placeholder([None, 3], rg.float32), g.placeholder([2, None], rg.float32)
    assert g.softMaxCrossEntropy(s, labels=lab, axis=1, reuctionType=R.none).shape == (2, 1)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_huge_logits_are_stable(dtype):
    source = np.array([[1e4, 1e4 - 2, -1e4], [-3e4, -3e4, -3e4]], dtype.numpy)
    labels = np.array([[0, 1, 0], [0.5, 0.5, 0]], dtype.numpy)
    got = run_op(loss_op(1, R.none), {"source": source, "labels": labels}, dtype)
    expected = [[2 + np.log1p(np.exp(-2))], [np.log(3)]]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("labels_kind", ["one-hot", "soft"])
@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 2)], ids=str)
def test_against_torch(shape, labels_kind, reduction, rng):
    """torch's class axis is 1: the op runs with axis=1 on the same arrays."""
    import torch  # the test extra's peer

    source = rng.normal(0, 2, shape)
    if labels_kind == "one-hot":
        labels, classes = one_hot(rng, shape, 1)
        target = torch.from_numpy(classes)
    else:
        labels = soft_labels(rng, shape, 1)
        target = torch.from_numpy(labels)
    expected = torch.nn.functional.cross_entropy(
        torch.from_numpy(source), target, reduction=reduction
    ).numpy()
    got = run_op(loss_op(1, R[reduction]), {"source": source, "labels": labels})
    assert got.shape == expected.shape == ()
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    got32 = run_op(loss_op(1, R[reduction]), {"source": source, "labels": labels}, rg.float32)
    np.testing.assert_allclose(got32, expected, rtol=2e-6)


@pytest.mark.parametrize("reduction", [R.none, R.sum, R.mean], ids=str)
@pytest.mark.parametrize("axis", [0, -1])
def test_gradients(axis, reduction, rng):
    """Both inputs: source (softmax·sum(labels) − labels) and labels (−log softmax); the
    labels need not sum to 1 here, so the sum(labels) factor is checked too."""
    shape = (3, 2, 3)
    source, labels = rng.normal(0, 2, shape), rng.uniform(0, 1, shape)
    error = fd_check(
        loss_op(axis, reduction),
        {"source": source, "labels": labels},
        rng,
        where=f"{OP} axis={axis} {reduction.name}",
    )
    assert error < FD_BOUND


def test_gradients_unknown_dims_and_second_order(rng):
    source, labels = rng.normal(size=(4, 3)), soft_labels(rng, (4, 3), 1)
    shapes = {"source": (None, 3), "labels": (None, 3)}
    error = fd_check(
        loss_op(1, R.mean),
        {"source": source, "labels": labels},
        rng,
        shapes=shapes,
        where=f"{OP} unknown dims",
    )
    assert error < FD_BOUND

    for label in ("source", "labels"):  # labels: through the internal logSoftMax's rule

        def second(g, t, label=label):
            loss = loss_op(1, R.mean)(g, t)
            return g.gradients(of=loss, with_=[t[label]])[t[label]]

        error = fd_check(
            second,
            {"source": source, "labels": labels},
            rng,
            shapes=shapes,
            where=f"{OP} second order via d{label}",
        )
        assert error < FD_BOUND


def test_one_hot_gradient_is_softmax_minus_labels(rng):
    source = rng.normal(size=(4, 5))
    labels, _ = one_hot(rng, (4, 5), 1)
    g = rg.Graph()
    s, lab = g.placeholder([4, 5], rg.float64), g.placeholder([4, 5], rg.float64)
    loss = g.softMaxCrossEntropy(s, labels=lab, axis=1, reuctionType=R.mean)
    grad = g.gradients(of=loss, with_=[s])[s]
    got = g.run(feeds={s: source, lab: labels}, targetTensors=[grad])[grad]
    p = np.exp(source) / np.exp(source).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, (p - labels) / 4, rtol=1e-13, atol=1e-16)


@pytest.fixture
def graph():
    g = rg.Graph()
    g.s = g.placeholder([4, 3], rg.float32)
    g.lab = g.placeholder([4, 3], rg.float32)
    return g


def test_errors(graph):
    g, s, lab = graph, graph.s, graph.lab
    with pytest.raises(TypeError, match=f"^{OP}: reuctionType: required"):
        g.softMaxCrossEntropy(s, labels=lab, axis=1)
    with pytest.raises(TypeError, match=f"^{OP}: reuctionType: .*not both"):
        g.softMaxCrossEntropy(s, labels=lab, axis=1, reuctionType=R.sum, reductionType=R.sum)
    with pytest.raises(
        TypeError, match=f"^{OP}: reuctionType: expected a rnngraph.LossReductionType, got 'sum'"
    ):
        g.softMaxCrossEntropy(s, labels=lab, axis=1, reductionType="sum")
    with pytest.raises(TypeError, match=f"^{OP}: source: "):
        g.softMaxCrossEntropy("x", labels=lab, axis=1, reuctionType=R.sum)
    with pytest.raises(TypeError, match=f"^{OP}: labels: "):
        g.softMaxCrossEntropy(s, labels=None, axis=1, reuctionType=R.sum)
    i = g.placeholder([4, 3], rg.int32)
    with pytest.raises(TypeError, match=f"^{OP}: source: expected float32 or float64, got int32"):
        g.softMaxCrossEntropy(i, labels=i, axis=1, reuctionType=R.sum)
    with pytest.raises(TypeError, match=f"^{OP}: labels: expected dataType float32"):
        g.softMaxCrossEntropy(s, labels=g.placeholder([4, 3], rg.int32), axis=1, reuctionType=R.sum)
    with pytest.raises(
        ValueError,
        match=rf"^{OP}: labels: expected source's shape \[4, 3\], "
        r"got \[4, 1\]",
    ):
        g.softMaxCrossEntropy(
            s, labels=g.placeholder([4, 1], rg.float32), axis=1, reuctionType=R.sum
        )
    with pytest.raises(ValueError, match=f"^{OP}: labels: expected source's shape"):
        g.softMaxCrossEntropy(
            s, labels=g.placeholder([4, 3, 1], rg.float32), axis=1, reuctionType=R.sum
        )
    with pytest.raises(ValueError, match=f"^{OP}: axis: axis 2 is out of range for rank 2"):
        g.softMaxCrossEntropy(s, labels=lab, axis=2, reuctionType=R.sum)
    with pytest.raises(TypeError, match=f"^{OP}: axis: expected an int axis"):
        g.softMaxCrossEntropy(s, labels=lab, axis="1", reuctionType=R.sum)
    with pytest.raises(TypeError, match=f"^{OP}: name: "):
        g.softMaxCrossEntropy(s, labels=lab, axis=1, reuctionType=R.sum, name=1)


def test_run_time_shape_error():
    g = rg.Graph()
    s, lab = g.placeholder([None, 3], rg.float32), g.placeholder([2, None], rg.float32)
    loss = g.softMaxCrossEntropy(s, labels=lab, axis=1, reuctionType=R.none)
    refused_at_run(
        g,
        rf"^{OP}: labels: expected source's shape \[3, 3\], got \[2, 3\]",
        {s: np.zeros((3, 3), np.float32), lab: np.zeros((2, 3), np.float32)},
        [loss],
    )
