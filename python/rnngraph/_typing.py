"""Type aliases for the package's own annotations (imported only while type checking)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from numpy.typing import NDArray

from rnngraph._core import GRUOptions, LSTMOptions, SingleGateRNNOptions
from rnngraph.dtypes import DataType
from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from rnngraph.graph import Operation

Shape: TypeAlias = tuple[int | None, ...]  # None: a dimension known only at run time
# An op's run-time inputs by Swift label: numpy arrays, or None for an absent optional.
RunArrays: TypeAlias = dict[str, Any]
# What an op computes at run time: its inputs by label -> its outputs, in order.
Compute: TypeAlias = Callable[[RunArrays], list[NDArray[Any]]]
# An op's outputs as Graph._add records them: (name suffix, shape, DataType).
OutputSpec: TypeAlias = tuple[str, Iterable[int | None], DataType]
# The compiled core's options, whichever kernel level runs (rnngraph._native).
CoreOptions: TypeAlias = SingleGateRNNOptions | LSTMOptions | GRUOptions


class GraphBuilder(Protocol):
    """What the op families (rnngraph.ops, mixed into Graph) use of their Graph."""

    _ops: list[Operation]
    _plans: dict[Any, Any]

    def _own(self, tensor: object, where: str) -> Tensor:
        ...

    def _constant_array(self, value: Any, shape: Iterable[int] | None, dataType: Any,
                        where: str, label: str = "value") -> NDArray[Any]:
        ...

    def _argument(self, value: object, where: str) -> Tensor | NDArray[Any] | None:
        ...

    def _constant(self, value: Any, shape: Iterable[int] | None, dataType: Any,
                  name: str | None, where: str) -> Tensor:
        ...

    def _add(self, kind: str, name: str | None, inputs: dict[str, Tensor | None],
             compute: Compute | None, outputs: Iterable[OutputSpec],
             attrs: dict[str, Any] | None = None) -> list[Tensor]:
        ...


# An op kind's gradient rule (rnngraph.autodiff): (graph, op, the gradients of its outputs
# (None for an output the loss does not reach), the input labels that need one) ->
# {input label: its gradient}.
Rule: TypeAlias = Callable[[GraphBuilder, "Operation", list[Tensor | None], set[str]],
                           dict[str, Tensor]]
