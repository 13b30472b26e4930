"""What the checks share: the tables of their failure messages and how they write numbers,
and the checks of a graph, a tolerance or a step."""

from __future__ import annotations

import math

import numpy as np

from rnngraph.graph import Graph


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _times(error: float) -> str:
    """An error as a multiple of its tolerance, for a message."""
    return "inf" if math.isinf(error) else f"{error:.3g}"


def _check_graph(function: str, graph: object) -> None:
    if not isinstance(graph, Graph):
        raise TypeError(f"{function}: graph: expected an rnngraph Graph, got "
                        f"{type(graph).__name__}")


def _positive(function: str, label: str, value: object, zero: bool = False,
              none: float | None = None) -> float:
    """``value`` as a finite float, > 0 (``zero``: >= 0); else an error naming ``function``
    and ``label``. With ``none`` given, ``None`` is accepted and stands for ``none``."""
    if value is None and none is not None:
        return none
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{function}: {label}: expected a number"
                        f"{' or None' if none is not None else ''}, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        raise ValueError(f"{function}: {label}: expected a finite number "
                         f"{'>= 0' if zero else '> 0'}, got {value!r}")
    return number
