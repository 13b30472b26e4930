"""Symbolic tensors: what graph-building calls return and ``Graph.run`` evaluates."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rnngraph.dtypes import DataType

if TYPE_CHECKING:
    from rnngraph._typing import Shape
    from rnngraph.graph import Graph, Operation


class Tensor:
    """A value in a Graph. ``shape`` holds ``None`` for dimensions known only at run time."""

    __slots__ = ("dataType", "graph", "index", "name", "op", "shape")

    graph: Graph
    op: Operation  # the op that produces it
    index: int  # which of the op's outputs it is
    shape: Shape
    dataType: DataType
    name: str

    def __init__(self, graph: Graph, op: Operation, index: int, shape: Iterable[int | None],
                 dataType: DataType, name: str) -> None:
        self.graph = graph
        self.op = op
        self.index = index
        self.shape = tuple(shape)
        self.dataType = dataType
        self.name = name

    @property
    def rank(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"Tensor(name={self.name!r}, shape=[{dims}], dataType={self.dataType!r})"
