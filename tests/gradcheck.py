"""Finite-difference helpers for the test files not yet on the toolkit.

They live in ``toolkit.finite_differences`` (with the ``WORST`` bookkeeping conftest.py
reports); this module re-exports them under their old names. New tests import ``toolkit``.
"""

from __future__ import annotations

from toolkit.finite_differences import (
    WORST,
    assert_gradients_close,
    numerical_gradients,
    random_direction_check,
    record,
)
from toolkit.tolerances import TOLERANCES, relative_error

FD_TOLERANCE = TOLERANCES["finite_differences"].bound

__all__ = [
    "FD_TOLERANCE",
    "WORST",
    "assert_gradients_close",
    "numerical_gradients",
    "random_direction_check",
    "record",
    "relative_error",
]
