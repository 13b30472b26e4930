"""Variables: ``variable``, ``read`` and ``assign`` (MPSGraph's stateful ops).

A variable holds an array that lives with the Graph across runs. ``assign`` records an
Operation; ``Graph.run(targetOperations=[...])`` runs it. Within one run every read sees the
values from before that run's assigns: the assigns take effect together when the run ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rnngraph.dtypes import as_data_type, frozen_copy
from rnngraph.ops.operands import operand, record
from rnngraph.shapes import compatible, shape_text
from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from numpy.typing import ArrayLike, DTypeLike, NDArray

    from rnngraph._typing import GraphBuilder
    from rnngraph.dtypes import DataType
    from rnngraph.graph import Operation


class VariableValue:
    """A variable's current array (read-only; an assign replaces it, never writes into it)."""

    __slots__ = ("array",)

    def __init__(self, array: NDArray[Any]) -> None:
        self.array = array

    def __deepcopy__(self, memo: dict[int, Any]) -> VariableValue:
        return VariableValue(self.array)  # arrays are read-only: sharing one is safe


class ReadValue:
    """A variable op's compute: the holder's current array. An object (not a closure) so a
    deep-copied Graph's variable reads the copied holder, the one its assigns write."""

    __slots__ = ("holder",)

    def __init__(self, holder: VariableValue) -> None:
        self.holder = holder

    def __call__(self, arrays: dict[str, Any]) -> list[NDArray[Any]]:
        # A view: the array owns its data, so NumPy would let anyone holding it set it
        # writeable again; a view of a read-only owner stays read-only.
        return [self.holder.array.view()]


class StateOps:
    def variable(self: GraphBuilder, with_: ArrayLike, shape: Iterable[int],
                 dataType: DataType | DTypeLike, name: str | None = None) -> Tensor:
        """A variable of ``shape`` and ``dataType`` whose value starts as ``with_`` (an array
        of that many elements, or a number filling it). Returns its Tensor: ops may read it
        directly or through ``read``; ``gradients`` reaches it like any input."""
        dtype = as_data_type(dataType, "variable: dataType")
        if shape is None:
            raise TypeError("variable: shape: expected a sequence of sizes, got None")
        initial = self._constant_array(with_, shape, dtype, "variable", "with_")
        value = VariableValue(initial)
        return record(self, "variable", name, {}, ReadValue(value),
                      [(initial.shape, dtype)], {"value": value})[0]

    def read(self: GraphBuilder, variable: Tensor, name: str | None = None) -> Tensor:
        """The variable's value at the start of the run, shaped like it."""
        tensor = as_variable(self, variable, "read: variable")
        return record(self, "read", name, {"variable": tensor}, lambda a: [a["variable"]],
                      [(tensor.shape, tensor.dataType)])[0]

    def assign(self: GraphBuilder, variable: Tensor, tensor: Tensor | ArrayLike,
               name: str | None = None) -> Operation:
        """An Operation that sets the variable to ``tensor`` (its shape and dataType) when a
        run that names it in ``targetOperations`` ends."""
        target = as_variable(self, variable, "assign: variable")
        value = operand(self, tensor, "assign: tensor", target.dataType)
        if value.dataType != target.dataType:
            raise TypeError(f"assign: tensor: expected dataType {target.dataType.value} like "
                            f"the variable, got {value.dataType.value}")
        if not compatible(value.shape, target.shape):
            raise ValueError(f"assign: tensor: expected the variable's shape "
                             f"{shape_text(target.shape)}, got {shape_text(value.shape)}")
        holder: VariableValue = target.op.attrs["value"]
        where = f"assign: tensor ({target.name!r})"
        # A result of an op marked operands.FRESH is an array no other value shares: the
        # variable keeps it (read-only; a run that also returns it returns it so) instead of
        # a copy. Copying every parameter and its Adam state cost 0.3-1.5 ms of the row-7
        # training step (benchmarks/bench_training_step.py).
        owned = bool(value.op.attrs.get("fresh"))

        def compute(arrays: dict[str, Any]) -> list[Any]:
            array = arrays["tensor"]
            if array.shape != holder.array.shape:
                raise ValueError(f"{where}: expected shape {list(holder.array.shape)}, got "
                                 f"{list(array.shape)}")
            if owned and array.dtype == holder.array.dtype and array.flags.c_contiguous:
                array.setflags(write=False)
                return [array]
            return [frozen_copy(array, holder.array.dtype, where)]

        outputs = record(self, "assign", name, {"variable": target, "tensor": value}, compute,
                         [(target.shape, target.dataType)], {"value": holder})
        return outputs[0].op


def as_variable(graph: GraphBuilder, variable: object, where: str) -> Tensor:
    tensor = graph._own(variable, where)
    if tensor.op.kind != "variable":
        raise TypeError(f"{where}: {tensor.name!r} is not a variable (make one with "
                        "Graph.variable)")
    return tensor


GRADIENT_RULES = {
    "read": lambda graph, op, grad, wanted: {"variable": grad[0]},
}
