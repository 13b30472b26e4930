"""Symbolic tensors: what graph-building calls return and ``Graph.run`` evaluates."""

from __future__ import annotations

import copy
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from rnngraph.dtypes import DataType
from rnngraph.shapes import shape_text

if TYPE_CHECKING:
    from rnngraph._typing import Shape
    from rnngraph.graph import Graph, Operation


_T = TypeVar("_T")

# Graphs and what belongs to them stay in the process that built them: their ops compute
# with Python closures, which pickle cannot carry (copy.deepcopy copies a Graph in-process).
UNPICKLABLE = ("rnngraph: {what} cannot be pickled (its ops are Python closures); build the "
               "Graph in the process that runs it (a worker's initializer, say) and send "
               "arrays, descriptors and Python values between processes")

class Tensor:
    """A value in a Graph. ``shape`` holds ``None`` for dimensions known only at run time.

    A Tensor refers to its Graph and its op weakly (the Graph owns its ops, and they their
    tensors), so deleting the Graph frees it at once; ``graph`` and ``op`` then raise."""

    __slots__ = ("__weakref__", "_graph", "_op", "_owner", "_placeholder", "dataType", "index",
                 "name", "shape")

    _graph: weakref.ReferenceType[Graph]
    _op: weakref.ReferenceType[Operation]
    _placeholder: bool  # whether its op is a placeholder (Graph.run checks every feed)
    # The Graph held strongly: only by a deep copy that copied its Graph itself (__deepcopy__)
    _owner: Graph | None
    index: int  # which of the op's outputs it is
    shape: Shape
    dataType: DataType
    name: str

    def __init__(self, graph: Graph, op: Operation, index: int, shape: Iterable[int | None],
                 dataType: DataType, name: str) -> None:
        self._graph = graph._ref
        self._op = weakref.ref(op)
        self._owner = None
        self._placeholder = op.kind == "placeholder"
        self.index = index
        self.shape = tuple(shape)
        self.dataType = dataType
        self.name = name

    @property
    def graph(self) -> Graph:
        """The Graph the tensor belongs to."""
        return self._alive(self._graph())

    @property
    def op(self) -> Operation:
        """The op that produces it."""
        return self._alive(self._op())

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError(UNPICKLABLE.format(what=f"a Tensor ({self.name!r})"))

    def __copy__(self) -> Tensor:
        return self  # a symbolic handle: the same value of the same Graph

    def _alive(self, target: _T | None) -> _T:
        """A weakly held Graph or Operation, or a ReferenceError once it is gone."""
        if target is None:
            raise ReferenceError(self._deleted())
        return target

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        """Copied with its Graph (see ``Graph.__deepcopy__``), referring to the copies. A
        Tensor copied before its Graph (``copy.deepcopy(tensor)``, or a feeds dict) holds the
        Graph copy it made, which the caller may have no other way to reach: the copy lives
        while the Tensor does (and is then freed by the cycle collector, not at once). Copy
        the Graph first, ``copy.deepcopy((graph, tensors))``, for tensors that hold it
        weakly."""
        new = Tensor.__new__(Tensor)
        memo[id(self)] = new
        copies_graph = id(self.graph) not in memo
        graph = copy.deepcopy(self.graph, memo)
        op = copy.deepcopy(self.op, memo)
        new._graph, new._op, new._placeholder = graph._ref, weakref.ref(op), self._placeholder
        new._owner = graph if copies_graph else None
        new.index, new.shape, new.dataType, new.name = (self.index, self.shape, self.dataType,
                                                        self.name)
        return new

    def _deleted(self) -> str:
        return (f"Tensor {self.name!r}: its Graph was deleted (keep a reference to the Graph "
                "while its tensors are used)")

    @property
    def rank(self) -> int:
        """The number of dimensions, ``len(shape)`` (known even where sizes are not)."""
        return len(self.shape)

    def __repr__(self) -> str:
        return (f"Tensor(name={self.name!r}, shape={shape_text(self.shape)}, "
                f"dataType={self.dataType!r})")
