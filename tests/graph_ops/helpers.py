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
    inputs, and records it in the suite's worst-error summary (toolkit's ``WORST``). Assert it
    below ``FD_BOUND``. Keep inputs tiny (every element costs two runs) and away from kinks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

import rnngraph as rg
from toolkit.finite_differences import record
from toolkit.tolerances import TOLERANCES, relative_error

Build = Callable[[rg.Graph, dict], rg.Tensor]

FD_BOUND = TOLERANCES["finite_differences"].bound
EPS = 1e-6


def _placeholders(g: rg.Graph, inputs: Mapping[str, np.ndarray], dataType,
                  shapes: Mapping[str, Sequence[int | None]] | None) -> dict:
    shapes = shapes or {}
    return {label: g.placeholder(shapes.get(label, np.shape(value)), dataType, name=label)
            for label, value in inputs.items()}


def run_op(build: Build, inputs: Mapping[str, np.ndarray], dataType=rg.float64,
           shapes: Mapping[str, Sequence[int | None]] | None = None) -> np.ndarray:
    """The op's result on ``inputs`` (see the module docstring)."""
    g = rg.Graph()
    tensors = _placeholders(g, inputs, dataType, shapes)
    out = build(g, tensors)
    feeds = {tensors[label]: np.asarray(value, dataType.numpy) for label, value in inputs.items()}
    return g.run(feeds=feeds, targetTensors=[out])[out]


def fd_check(build: Build, inputs: Mapping[str, np.ndarray], rng: np.random.Generator,
             shapes: Mapping[str, Sequence[int | None]] | None = None, where: str = "") -> float:
    """The worst relative error of ``g.gradients`` against central differences (see the
    module docstring)."""
    g = rg.Graph()
    tensors = _placeholders(g, inputs, rg.float64, shapes)
    arrays = {label: np.array(value, np.float64) for label, value in inputs.items()}
    out = build(g, tensors)
    feeds = {tensors[label]: arrays[label] for label in arrays}
    value = g.run(feeds=feeds, targetTensors=[out])[out]
    weights = g.constant(rng.standard_normal(value.shape), dataType=rg.float64)
    loss = g.reductionSum(g.multiplication(out, weights), axes=list(range(value.ndim)))
    grads = g.gradients(of=loss, with_=list(tensors.values()))
    analytic = g.run(feeds=feeds, targetTensors=[grads[t] for t in tensors.values()])

    def loss_at() -> float:
        return float(g.run(feeds=feeds, targetTensors=[loss])[loss].sum())

    worst = 0.0
    for label, array in arrays.items():
        numeric = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            saved = array[index]
            array[index] = saved + EPS
            plus = loss_at()
            array[index] = saved - EPS
            minus = loss_at()
            array[index] = saved
            numeric[index] = (plus - minus) / (2 * EPS)
        error = relative_error(analytic[grads[tensors[label]]], numeric)
        worst = max(worst, record(error, f"{where or 'fd_check'}: d{label}"))
    return worst
