"""What the ops around the recurrent ones share: turning arguments into Tensors, the result
type, NumPy broadcasting with dimensions unknown until run time, and the gradient helpers
that undo a broadcast.

Every error names the op and the Swift label (``addition: secondaryTensor: ...``).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.dtypes import DataType, as_data_type
from rnngraph.ops.arguments import is_integer
from rnngraph.shapes import shape_text
from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rnngraph._typing import Compute, GraphBuilder, Shape


def operand(graph: GraphBuilder, value: object, where: str,
            like: DataType | None = None) -> Tensor:
    """``value`` as a Tensor of ``graph``: a Tensor of it as it is; a Python number, list or
    tuple, or a NumPy array as a constant. Python numbers (alone or in a list or tuple) take
    ``like`` (the other operand's type) when there is one; an array keeps float64 and
    int32/int64, and any other real array becomes float32."""
    if isinstance(value, Tensor):
        return graph._own(value, where)
    if value is None:
        raise TypeError(f"{where}: expected an rnngraph Tensor, a number or an array, got None")
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.ndarray, np.generic,
                                                         list, tuple)):
        raise TypeError(f"{where}: expected an rnngraph Tensor, a number or an array, got "
                        f"{type(value).__name__}")
    python_numbers = (isinstance(value, (list, tuple))
                      or (isinstance(value, numbers.Real) and not isinstance(value, np.generic)))
    if python_numbers and like is not None:
        return graph._constant(value, None, like, None, where)
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise TypeError(f"{where}: expected real numbers, got dtype {array.dtype}")
    dtype = like if like is not None and array.ndim == 0 else _data_type_of(array)
    return graph._constant(array, None, dtype, None, where)


def _data_type_of(array: NDArray[Any]) -> DataType:
    if array.dtype in (np.float64, np.int32, np.int64):
        return DataType[array.dtype.name]
    return DataType.float32


def operands(graph: GraphBuilder, op: str, values: Mapping[str, object]) -> dict[str, Tensor]:
    """Several operands of one op, by label: Tensors first, then NumPy arrays (not scalars),
    so that a Python number takes the type of the first of them."""
    made = {label: graph._own(v, f"{op}: {label}") for label, v in values.items()
            if isinstance(v, Tensor)}
    for label, v in values.items():
        if label not in made and isinstance(v, np.ndarray) and v.ndim > 0:
            made[label] = operand(graph, v, f"{op}: {label}")
    like = next(iter(made.values())).dataType if made else None
    return {label: made[label] if label in made else operand(graph, v, f"{op}: {label}", like)
            for label, v in values.items()}


def same_type(op: str, tensors: Mapping[str, Tensor], floats_only: bool = False) -> DataType:
    """The one DataType all ``tensors`` share (MPSGraph's binary ops take equal types), else a
    TypeError naming the first that differs."""
    labels = list(tensors)
    first = tensors[labels[0]].dataType
    for label in labels[1:]:
        if tensors[label].dataType != first:
            raise TypeError(f"{op}: {label}: expected dataType {first.value} like {labels[0]}, "
                            f"got {tensors[label].dataType.value}")
    if floats_only and not first.is_float:
        raise TypeError(f"{op}: {labels[0]}: expected float32 or float64, got {first.value}")
    return first


def broadcast_shapes(op: str, shapes: Mapping[str, Shape]) -> Shape:
    """NumPy's broadcast of ``shapes`` (by label); a dimension unknown (None) in one and 1 or
    unknown in the others stays unknown. A mismatch is a ValueError at build time."""
    rank = max(len(shape) for shape in shapes.values())
    result: list[int | None] = []
    for axis in range(rank):
        known: set[int] = set()
        unknown = False
        for shape in shapes.values():
            offset = axis - (rank - len(shape))
            if offset < 0:
                continue
            d = shape[offset]
            if d is None:
                unknown = True
            elif d != 1:
                known.add(d)
        if len(known) > 1:
            given = ", ".join(f"{label} {shape_text(shape)}" for label, shape in shapes.items())
            raise ValueError(f"{op}: shapes do not broadcast: {given}")
        result.append(known.pop() if known else (None if unknown else 1))
    return tuple(result)


def axis_index(op: str, label: str, axis: object, rank: int) -> int:
    """A Python or NumPy int axis in [-rank, rank), as a non-negative index."""
    if not is_integer(axis):
        raise TypeError(f"{op}: {label}: expected an int axis, got {axis!r}")
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: {label}: axis {axis} is out of range for rank {rank}")
    return int(axis) % rank


def ordered_axes(op: str, label: str, axes: object, rank: int) -> tuple[int, ...]:
    """A sequence of distinct axes (or one int axis), each as ``axis_index`` reads it, in
    the given order."""
    if is_integer(axes):
        axes = [axes]
    if not isinstance(axes, Iterable) or isinstance(axes, (str, bytes)):
        raise TypeError(f"{op}: {label}: expected a sequence of int axes, got {axes!r}")
    entries = list(axes)
    found = tuple(axis_index(op, label, a, rank) for a in entries)
    if len(set(found)) != len(found):
        raise ValueError(f"{op}: {label}: repeated axis in {entries}")
    return found


def axes_indices(op: str, label: str, axes: object, rank: int) -> tuple[int, ...]:
    """``ordered_axes``, sorted."""
    return tuple(sorted(ordered_axes(op, label, axes, rank)))


def axis_or_axes(op: str, axis: object, axes: object) -> tuple[str, list[object]]:
    """Which of the overloads' labels was given (``axis=`` or ``axes=``, not both), and its
    axes as a list (for ``axes_indices``)."""
    if axis is not None and axes is not None:
        raise TypeError(f"{op}: axes: give axis= or axes=, not both")
    if axis is None and axes is None:
        raise TypeError(f"{op}: axis: expected axis= or axes=")
    if axis is not None:
        return "axis", [axis]
    if is_integer(axes):  # one axis under axes=, as mean and NumPy take it
        return "axes", [axes]
    if isinstance(axes, (str, bytes)) or not isinstance(axes, (Sequence, np.ndarray)):
        raise TypeError(f"{op}: axes: expected a sequence of int axes, got {axes!r}")
    return "axes", list(axes)


# The attrs of an op whose result is a view of its input (reshape, transposes, slices):
# no op writes into an input, so views are safe inside a run and cost nothing; Graph.run
# copies such a result only when it is returned (it must not alias a feed, a variable or
# another result). Copying instead cost 3 ms of a 55 ms training step at row-7 size
# (benchmarks/bench_training_step.py).
VIEW = {"view": True}
# The attrs of an op whose results are fresh arrays that nothing else holds (an optimizer's
# update): an assign of one keeps it, read-only, instead of copying it.
FRESH = {"fresh": True}


def record(graph: GraphBuilder, kind: str, name: str | None, inputs: dict[str, Tensor],
           compute: Compute, outputs: Sequence[tuple[Shape, DataType]],
           attrs: dict[str, Any] | None = None) -> list[Tensor]:
    """Record an op with unnamed outputs (``name``, ``name/1``, ...)."""
    specs = [("" if i == 0 else str(i), shape, dtype) for i, (shape, dtype) in enumerate(outputs)]
    return graph._add(kind, name, dict(inputs), compute, specs, attrs)


def data_type(op: str, label: str, value: object) -> DataType:
    """A DataType argument (``cast(t, to=)``, ``variable(dataType=)``)."""
    return as_data_type(value, f"{op}: {label}")  # type: ignore[arg-type]


# --- gradient helpers ------------------------------------------------------------------------

def ones_like(graph: GraphBuilder, t: Tensor) -> Tensor:
    """Ones shaped like ``t`` (at run time): where the backward walk starts."""
    return record(graph, "onesLike", None, {"x": t}, lambda a: [np.ones_like(a["x"])],
                  [(t.shape, t.dataType)])[0]


def zeros_like(graph: GraphBuilder, t: Tensor) -> Tensor:
    """Zeros shaped like ``t`` (at run time): the gradient of what the loss does not reach."""
    return record(graph, "zerosLike", None, {"x": t}, lambda a: [np.zeros_like(a["x"])],
                  [(t.shape, t.dataType)])[0]


def sum_to_shape(array: NDArray[Any], shape: tuple[int, ...]) -> NDArray[Any]:
    """Undo NumPy broadcasting: sum ``array`` over the axes that broadcasting added or
    stretched from 1, so the result has ``shape``."""
    extra = array.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(extra + i for i, d in enumerate(shape)
                                       if d == 1 and array.shape[extra + i] != 1)
    summed = array.sum(axis=axes, keepdims=True) if axes else array
    return summed.reshape(shape)


def unbroadcast(graph: GraphBuilder, gradient: Tensor, like: Tensor) -> Tensor:
    """``gradient`` (of a broadcast result) reduced to ``like``'s shape: the gradient of an
    operand that broadcasting stretched. No op is added when the shapes already agree."""
    if gradient.shape == like.shape and None not in like.shape:
        return gradient
    return record(graph, "sumToShape", None, {"x": gradient, "like": like},
                  lambda a: [sum_to_shape(a["x"], a["like"].shape)],
                  [(like.shape, gradient.dataType)], VIEW)[0]  # (x itself when nothing to sum)


def broadcast_like(graph: GraphBuilder, tensor: Tensor, like: Tensor) -> Tensor:
    """``tensor`` broadcast to ``like``'s shape (the gradient of ``sumToShape``)."""
    if tensor.shape == like.shape and None not in like.shape:
        return tensor
    return record(graph, "broadcastLike", None, {"x": tensor, "like": like},
                  lambda a: [np.ascontiguousarray(np.broadcast_to(a["x"], a["like"].shape))],
                  [(like.shape, tensor.dataType)], VIEW)[0]  # (x itself when shapes agree)


GRADIENT_RULES = {
    # d(sumToShape)/dx broadcasts the gradient back; d(broadcastLike)/dx sums it.
    "sumToShape": lambda graph, op, grad, wanted: {"x": broadcast_like(graph, grad[0], op.inputs["x"])},
    "broadcastLike": lambda graph, op, grad, wanted: {"x": unbroadcast(graph, grad[0], op.inputs["x"])},
}
