"""Gradient checks by central differences (float64, tiny shapes) and their bookkeeping.

Every check records its error in ``WORST``; conftest.py prints the worst one at the end of
the run, and, for the checks that name the Graph op kinds they went through (``rules=``), the
worst error per kind in ``WORST_BY_RULE``: an upper bound for each gradient rule, since a
check through several kinds counts for each of them. ``check_gradients`` is the usual entry
point: it compares the analytic gradients of a case with central differences of the loss
through rnngraph's forward op and through the NumPy reference.
"""

from __future__ import annotations

import numpy as np

from . import runner
from .tolerances import TOLERANCES, relative_error

WORST = {"error": None, "where": ""}
WORST_BY_RULE: dict[str, tuple[float, str]] = {}  # op kind -> (worst error, where)
EPS = 1e-6


def record(error: float, where: str, rules=()) -> float:
    if WORST["error"] is None or error > WORST["error"]:
        WORST["error"], WORST["where"] = error, where
    for rule in rules:
        if rule not in WORST_BY_RULE or error > WORST_BY_RULE[rule][0]:
            WORST_BY_RULE[rule] = (error, where)
    return error


def numerical_gradients(loss, inputs: dict, eps: float = EPS) -> dict:
    """d loss / d inputs[k] for every k by central differences; ``loss(inputs) -> float``.
    The arrays in ``inputs`` are perturbed in place and restored."""
    grads = {}
    for label, array in inputs.items():
        grad = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            saved = array[index]
            array[index] = saved + eps
            plus = loss(inputs)
            array[index] = saved - eps
            minus = loss(inputs)
            array[index] = saved
            grad[index] = (plus - minus) / (2 * eps)
        grads[label] = grad
    return grads


def assert_gradients_close(analytic: dict, numeric: dict, where: str,
                           tol: float = TOLERANCES["finite_differences"].bound):
    assert set(analytic) == set(numeric), (
        f"{where}: gradients for {sorted(analytic)} vs {sorted(numeric)}")
    for label, expected in numeric.items():
        error = record(relative_error(analytic[label], expected), f"{where}: {label}")
        assert error < tol, f"{where}: d{label} differs from finite differences by {error:.2e}"


def random_direction_check(loss, analytic: dict, inputs: dict, rng, eps: float = EPS,
                           where: str = "", tol: float = TOLERANCES["random_direction"].bound):
    """Medium shapes: compare the directional derivative along one random direction."""
    direction = {k: rng.standard_normal(v.shape) for k, v in inputs.items()}
    plus = {k: v + eps * direction[k] for k, v in inputs.items()}
    minus = {k: v - eps * direction[k] for k, v in inputs.items()}
    numeric = (loss(plus) - loss(minus)) / (2 * eps)
    predicted = sum(float(np.sum(analytic[k] * direction[k])) for k in inputs)
    error = record(abs(numeric - predicted) / max(1.0, abs(numeric)),
                   f"{where} (random direction)")
    assert error < tol, f"{where}: directional derivative off by {error:.2e}"


def differentiable(case, x: dict) -> dict:
    """The inputs the gradient op returns gradients for (SPEC section 6), by label."""
    return {label: x[label] for label in case.returned}


def check_gradients(case, x: dict, signals, analytic: dict,
                    through=("rnngraph", "reference")):
    """Every analytic gradient against central differences of the loss through each of
    ``through``; the gradient labels must be exactly ``case.returned``."""
    assert list(analytic) == list(case.returned), (
        f"{case.id}: gradients {list(analytic)}, SPEC.md section 6 wants {case.returned}")
    assert x["source"].dtype == np.float64, "finite differences need float64"
    inputs = differentiable(case, x)
    for path in through:
        loss = runner.loss(case, signals, through=path)
        numeric = numerical_gradients(lambda a, loss=loss: loss({**x, **a}), inputs)
        assert_gradients_close(analytic, numeric, f"{case.cell} {case.id} (FD of {path})")


def check_random_direction(case, x: dict, signals, analytic: dict, rng, through="rnngraph"):
    """``random_direction_check`` of a case's analytic gradients."""
    loss = runner.loss(case, signals, through=through)
    random_direction_check(lambda a: loss({**x, **a}), analytic, differentiable(case, x), rng,
                           where=f"{case.cell} {case.id} (FD of {through})")
