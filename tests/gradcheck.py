"""Central-difference gradient checks (float64, tiny shapes) and the error bookkeeping.

``relative_error`` is max|a - b| / max(1, max|b|): absolute for small gradients, relative
for large ones. Every check records its error so the session reports the worst one.
"""

from __future__ import annotations

import numpy as np

WORST = {"error": None, "where": ""}
FD_TOLERANCE = 1e-6  # float64, eps = 1e-6: truncation ~eps², rounding ~1e-16/eps


def relative_error(actual, expected) -> float:
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"shape {actual.shape} != {expected.shape}")
    if actual.size == 0:
        return 0.0
    return float(np.max(np.abs(actual - expected)) / max(1.0, float(np.max(np.abs(expected)))))


def record(error: float, where: str) -> float:
    if WORST["error"] is None or error > WORST["error"]:
        WORST["error"], WORST["where"] = error, where
    return error


def numerical_gradients(loss, inputs: dict, eps: float = 1e-6) -> dict:
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


def assert_gradients_close(analytic: dict, numeric: dict, where: str, tol: float = FD_TOLERANCE):
    assert set(analytic) == set(numeric), f"{where}: gradients for {sorted(analytic)} vs {sorted(numeric)}"
    for label in numeric:
        error = record(relative_error(analytic[label], numeric[label]), f"{where}: {label}")
        assert error < tol, f"{where}: d{label} differs from finite differences by {error:.2e}"


def random_direction_check(loss, analytic: dict, inputs: dict, rng, eps: float = 1e-6,
                           where: str = "", tol: float = 1e-6):
    """Medium shapes: compare the directional derivative along one random direction."""
    direction = {k: rng.standard_normal(v.shape) for k, v in inputs.items()}
    plus = {k: v + eps * direction[k] for k, v in inputs.items()}
    minus = {k: v - eps * direction[k] for k, v in inputs.items()}
    numeric = (loss(plus) - loss(minus)) / (2 * eps)
    predicted = sum(float(np.sum(analytic[k] * direction[k])) for k in inputs)
    error = record(abs(numeric - predicted) / max(1.0, abs(numeric)), f"{where} (random direction)")
    assert error < tol, f"{where}: directional derivative off by {error:.2e}"
