"""MPSGraph's sigmoid, tanh, reLU and softMax."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rnngraph._typing import Rule


class ActivationOps:
    pass


GRADIENT_RULES: dict[str, Rule] = {}
