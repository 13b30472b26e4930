"""What the checks share: the tables of their failure messages, and a tensor's Graph."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rnngraph.graph import Graph
    from rnngraph.tensor import Tensor


def _shape_text(shape: Iterable[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _graph_of(tensor: Tensor) -> Graph | None:
    try:
        return tensor.graph
    except ReferenceError:
        return None
