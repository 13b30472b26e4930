"""MPSGraph's reshape, transpose, transposeTensor, sliceTensor, concatTensors, expandDims, squeeze and cast."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rnngraph._typing import Rule


class ReshapingOps:
    pass


GRADIENT_RULES: dict[str, Rule] = {}
