"""MPSGraph's reductionSum and mean (reduced axes kept as size 1, as MPSGraph does)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rnngraph._typing import Rule


class ReductionOps:
    pass


GRADIENT_RULES: dict[str, Rule] = {}
