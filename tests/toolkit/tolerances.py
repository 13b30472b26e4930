"""The tolerance table: every bound a test compares results with, each with its reason.

All bounds are on one measure, ``relative_error(actual, expected)`` =
max|actual − expected| / max(1, max|expected|): an absolute error for values of order one
or less, a relative one for larger values. A bound of 0 means bit-for-bit equality.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Tolerance(NamedTuple):
    bound: float
    reason: str


TOLERANCES = {
    "identical": Tolerance(
        0.0, "the same operations on the same data (layout variants, repeated runs)"),
    "activation": Tolerance(
        1e-14, "h = act(zState) re-evaluated element by element in NumPy: one rounding"),
    "float64": Tolerance(
        1e-12, "float64 against another float64 implementation (reference, torch, a second "
        "rnngraph op): only summation order differs"),
    "float64_medium": Tolerance(
        1e-11, "float64, medium shapes: sums of hundreds of terms, in another order"),
    "hand": Tolerance(
        1e-15, "float64 against hand-computed values of exactly representable inputs"),
    "finite_differences": Tolerance(
        1e-6, "central differences in float64, eps = 1e-6: truncation ~eps², rounding "
        "~1e-16/eps"),
    "random_direction": Tolerance(
        1e-6, "one central difference along a random direction; same error budget as above"),
    "float32_forward": Tolerance(
        1e-5, "float32 (u = 6e-8) over T ≤ 10 contracting steps of ≤ 24-term dot products: "
        "a few hundred roundoffs"),
    "float32_gradients": Tolerance(
        1e-4, "float32 gradients also sum over T·N terms and run back through every step"),
    "onnxruntime_float32": Tolerance(
        2e-6, "onnxruntime's GRU runs in float32 only: ~2e-7 over T = 6 steps of O(1) values"),
}


def relative_error(actual, expected) -> float:
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    if actual.shape != expected.shape:
        raise AssertionError(f"shape {actual.shape} != {expected.shape}")
    if actual.size == 0:
        return 0.0
    return float(np.max(np.abs(actual - expected)) / max(1.0, float(np.max(np.abs(expected)))))


def assert_close(actual, expected, tolerance: str, what: str = "") -> float:
    """``relative_error(actual, expected) <= TOLERANCES[tolerance].bound``; returns the error.
    Shapes must agree exactly."""
    bound = TOLERANCES[tolerance].bound
    if bound == 0.0:
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return 0.0
    error = relative_error(actual, expected)
    assert error <= bound, f"{what}: error {error:.2e} above the {tolerance} bound {bound:.0e}"
    return error


def assert_all_close(actual: dict, expected: dict, tolerance: str, what: str = ""):
    """``assert_close`` for every key; the key sets must agree."""
    assert set(actual) == set(expected), (
        f"{what}: {sorted(actual)} vs {sorted(expected)}")
    for key, value in expected.items():
        assert_close(actual[key], value, tolerance, f"{what} {key}".strip())
