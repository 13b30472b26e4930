"""Helpers for the tests of the ops around the recurrent ones (tests/graph_ops/).

A test hands over a ``build(g, tensors) -> Tensor`` function: it builds the op under test on
``g`` from ``tensors`` (placeholders, by the labels of ``inputs``). Two entry points:

``run_op(build, inputs, dataType=rg.float64, shapes=None) -> ndarray``
    Runs the op on ``inputs`` (dict label -> array), fed through placeholders of
    ``dataType``; ``shapes[label]`` (optional) gives a placeholder shape with None for
    dimensions known only at run time.

``fd_check(build, inputs, rng, shapes=None, where="") -> float``
    Builds the op on float64 placeholders, forms ``loss = reductionSum(out * W)`` over every
    axis (W: a random constant drawn from ``rng``), takes ``g.gradients(of=loss, with_=[every
    placeholder])`` and compares them with central differences (eps = 1e-6) of the loss.
    Returns the worst error, ``max|analytic - numeric| / max(1, max|numeric|)`` over the
    inputs, and records it in the suite's worst-error summary (toolkit's ``WORST``, and
    ``WORST_BY_RULE`` under every op kind ``build`` added: the gradient rules checked). Assert it
    below ``FD_BOUND``. Keep inputs tiny (every element costs two runs) and away from kinks.

Also shared by the tests here: the data-type lists ``FLOATS``, ``INTS`` and ``ALL``;
``draw(rng, shape, dtype, low, high, away)``, random values of a data type;
``numpy_adam``, the NumPy Adam (AMSGrad) reference; and ``refused_at_run(g, match, feeds,
targetTensors, targetOperations)``, which asserts that ``g.run`` raises a ValueError whose
message matches ``match``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pytest

import rnngraph as rg
from toolkit.finite_differences import numerical_gradients, record
from toolkit.tolerances import TOLERANCES, relative_error

Build = Callable[[rg.Graph, dict], rg.Tensor]

FD_BOUND = TOLERANCES["finite_differences"].bound
FLOATS = [rg.float32, rg.float64]
INTS = [rg.int32, rg.int64]
ALL = FLOATS + INTS


def draw(rng: np.random.Generator, shape, dtype, low=-3.0, high=3.0, away=0.0) -> np.ndarray:
    """Values of ``dtype`` in [low, high] with |x| >= away (ints: nonzero when away > 0)."""
    if not dtype.is_float:
        values = rng.integers(max(int(low), 1) if away else int(low), int(high) + 1, shape)
        sign = rng.choice([-1, 1], shape) if away else 1
        return (values * sign).astype(dtype.numpy)
    x = rng.uniform(low, high, shape)
    x = np.where(np.abs(x) < away, np.copysign(away, x) + x, x)
    return x.astype(dtype.numpy)


def numpy_adam(
    state: Mapping[str, np.ndarray],
    gradients,
    lr,
    beta1,
    beta2,
    epsilon,
    first: int = 1,
    corrected: bool = True,
    dtype=np.float64,
) -> list[dict]:
    """Adam (AMSGrad when ``state`` has ``maximumVelocity``) as Apple's header and
    docs/training.md write it, from ``state`` ({"values", "momentum", "velocity"[,
    "maximumVelocity"]}): the state after each step t = first, first + 1, ..., keys in that
    order. The rate at step t is ``lr * sqrt(1 - beta2^t) / (1 - beta1^t)``, or ``lr`` itself
    when not ``corrected`` (the fused step, given the current rate). Computed in ``dtype``
    (None: the state's own)."""
    state = {k: np.asarray(v, dtype) for k, v in state.items()}
    steps = []
    for t, g in enumerate(gradients, start=first):
        lr_t = lr * np.sqrt(1 - beta2**t) / (1 - beta1**t) if corrected else lr
        m = beta1 * state["momentum"] + (1 - beta1) * g
        v = beta2 * state["velocity"] + (1 - beta2) * g**2
        amsgrad = "maximumVelocity" in state
        denominator = np.maximum(state["maximumVelocity"], v) if amsgrad else v
        state = {
            "values": state["values"] - lr_t * m / (np.sqrt(denominator) + epsilon),
            "momentum": m,
            "velocity": v,
        }
        if amsgrad:
            state["maximumVelocity"] = denominator
        steps.append(state)
    return steps


def _placeholders(
    g: rg.Graph,
    inputs: Mapping[str, np.ndarray],
    dataType,
    shapes: Mapping[str, Sequence[int | None]] | None,
) -> dict:
    shapes = shapes or {}
    return {
        label: g.placeholder(shapes.get(label, np.shape(value)), dataType, name=label)
        for label, value in inputs.items()
    }


def run_op(
    build: Build,
    inputs: Mapping[str, np.ndarray],
    dataType=rg.float64,
    shapes: Mapping[str, Sequence[int | None]] | None = None,
) -> np.ndarray:
    """The op's result on ``inputs`` (see the module docstring)."""
    g = rg.Graph()
    tensors = _placeholders(g, inputs, dataType, shapes)
    out = build(g, tensors)
    feeds = {tensors[label]: np.asarray(value, dataType.numpy) for label, value in inputs.items()}
    return g.run(feeds=feeds, targetTensors=[out])[out]


def fd_check(
    build: Build,
    inputs: Mapping[str, np.ndarray],
    rng: np.random.Generator,
    shapes: Mapping[str, Sequence[int | None]] | None = None,
    where: str = "",
) -> float:
    """The worst relative error of ``g.gradients`` against central differences (see the
    module docstring)."""
    g = rg.Graph()
    tensors = _placeholders(g, inputs, rg.float64, shapes)
    arrays = {label: np.array(value, np.float64) for label, value in inputs.items()}
    built_from = len(g._ops)
    out = build(g, tensors)
    rules = {op.kind for op in g._ops[built_from:]} - {"placeholder", "constant"}
    feeds = {tensors[label]: arrays[label] for label in arrays}
    value = g.run(feeds=feeds, targetTensors=[out])[out]
    weights = g.constant(rng.standard_normal(value.shape), dataType=rg.float64)
    loss = g.reductionSum(g.multiplication(out, weights), axes=list(range(value.ndim)))
    grads = g.gradients(of=loss, with_=list(tensors.values()))
    analytic = g.run(feeds=feeds, targetTensors=[grads[t] for t in tensors.values()])

    def loss_at(_arrays) -> float:  # the feeds hold the arrays perturbed in place
        return float(g.run(feeds=feeds, targetTensors=[loss])[loss].sum())

    worst = 0.0
    for label, numeric in numerical_gradients(loss_at, arrays).items():
        error = relative_error(analytic[grads[tensors[label]]], numeric)
        worst = max(worst, record(error, f"{where or 'fd_check'}: d{label}", rules))
    return worst


def refused_at_run(
    g: rg.Graph,
    match: str,
    feeds: Mapping,
    targetTensors: Sequence = (),
    targetOperations: Sequence = (),
) -> None:
    """Asserts that running ``g`` on ``feeds`` raises a ValueError matching ``match`` (a shape
    or value that only the run can check)."""
    with pytest.raises(ValueError, match=match):
        g.run(
            feeds=dict(feeds),
            targetTensors=list(targetTensors),
            targetOperations=list(targetOperations),
        )
