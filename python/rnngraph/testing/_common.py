"""What the checks share: the tables of their failure messages, and a tensor's Graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from rnngraph.graph import Graph


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


def _own(function: str, label: str, graph: Graph, tensor: object) -> Tensor:
    """``tensor`` if it is a Tensor of ``graph``; else an error naming ``function`` and
    ``label``."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{function}: {label}: expected an rnngraph Tensor, got "
                        f"{type(tensor).__name__}")
    if _graph_of(tensor) is not graph:
        raise ValueError(f"{function}: {label}: tensor {tensor.name!r} belongs to another "
                         "Graph (or to one that was deleted)")
    return tensor
