"""MPSGraph's addition, subtraction, multiplication, division, matrixMultiplication, square, squareRoot, exponent, logarithm, negative, clamp and select."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rnngraph._typing import Rule


class ArithmeticOps:
    pass


GRADIENT_RULES: dict[str, Rule] = {}
