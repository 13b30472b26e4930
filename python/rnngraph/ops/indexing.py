"""MPSGraph's oneHot and gather."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rnngraph._typing import Rule


class IndexingOps:
    pass


GRADIENT_RULES: dict[str, Rule] = {}
