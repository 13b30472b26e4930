"""MPSGraph's reshape, transpose, transposeTensor, expandDims and squeeze, with their gradient
rules (sliceTensor and concatTensors are in slicing.py, cast in conversion.py).

Every op takes the four data types and dimensions unknown until run time (None). Inside a run
the results are views of the input (operands.VIEW); Graph.run returns them as copies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.ops.arguments import integer_argument, naming, present
from rnngraph.ops.operands import (
    VIEW,
    axes_indices,
    axis_index,
    axis_or_axes,
    operand,
    ordered_axes,
    record,
)
from rnngraph.shapes import shape_text

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from rnngraph._typing import GraphBuilder, Rule, Shape
    from rnngraph.graph import Operation
    from rnngraph.tensor import Tensor


class ReshapingOps:
    def reshape(self: GraphBuilder, tensor: Tensor | ArrayLike, *, shape: Sequence[int],
                name: str | None = None) -> Tensor:
        """``tensor``'s elements, in order, as ``shape``; one entry may be -1 (the size that
        makes the element counts agree). With unknown dimensions the counts are checked at
        run time.

        Args:
            tensor: ``[d0, d1, ...]``, any type.
            shape: a sequence of sizes, at most one -1.
        Returns:
            ``shape`` (its -1 resolved, or unknown while ``tensor``'s shape is), same type.
        """
        x = operand(self, tensor, "reshape: tensor")
        if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
            raise TypeError(f"reshape: shape: expected a sequence of sizes, got {shape!r}")
        dims = tuple(integer_argument("reshape", "shape", d, minimum=-1) for d in shape)
        if dims.count(-1) > 1:
            raise ValueError(f"reshape: shape: at most one -1, got {list(dims)}")
        result = _reshaped(x.shape, dims, "reshape: shape")
        where = f"reshape: shape{naming(name)}"
        static = None not in x.shape  # the counts were checked here, once

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            array = arrays["tensor"]
            if not static:
                _reshaped(array.shape, dims, where)
            return [array.reshape(dims)]

        return record(self, "reshape", name, {"tensor": x}, compute, [(result, x.dataType)],
                      {"shape": dims, **VIEW})[0]

    def transpose(self: GraphBuilder, tensor: Tensor | ArrayLike, *,
                  permutation: Sequence[int], name: str | None = None) -> Tensor:
        """``tensor`` with its dimensions permuted: result dimension ``i`` is ``tensor``'s
        dimension ``permutation[i]`` (as ``numpy.transpose``).

        Args:
            tensor: ``[d0, ..., d(r-1)]``, any type.
            permutation: a permutation of ``0..r-1`` (negative entries count from the end).
        Returns:
            ``[d(permutation[0]), ..., d(permutation[r-1])]``, same type.
        """
        x = operand(self, tensor, "transpose: tensor")
        order = ordered_axes("transpose", "permutation", permutation, x.rank)
        if isinstance(permutation, (int, np.integer)) or len(order) != x.rank:
            raise ValueError(f"transpose: permutation: expected a permutation of "
                             f"{list(range(x.rank))}, got {permutation!r}")
        return _permuted(self, "transpose", name, x, order)

    def transposeTensor(self: GraphBuilder, tensor: Tensor | ArrayLike, *, dimension: int,
                        withDimension: int, name: str | None = None) -> Tensor:
        """``tensor`` with dimensions ``dimension`` and ``withDimension`` swapped.

        Args:
            tensor: ``[..., a, ..., b, ...]``, any type.
            dimension, withDimension: the two dimensions (negative counts from the end).
        Returns:
            ``[..., b, ..., a, ...]``, same type.
        """
        x = operand(self, tensor, "transposeTensor: tensor")
        first = axis_index("transposeTensor", "dimension", dimension, x.rank)
        second = axis_index("transposeTensor", "withDimension", withDimension, x.rank)
        order = list(range(x.rank))
        order[first], order[second] = second, first
        return _permuted(self, "transposeTensor", name, x, tuple(order))

    def expandDims(self: GraphBuilder, tensor: Tensor | ArrayLike, *, axis: int | None = None,
                   axes: Sequence[int] | int | None = None, name: str | None = None) -> Tensor:
        """``tensor`` with size-1 dimensions inserted: at ``axis``, or at each of ``axes``
        (positions in the result, as ``numpy.expand_dims`` reads them).

        Args:
            tensor: ``[d0, ..., d(r-1)]``, any type.
            axis: in ``[-(r+1), r]``; or ``axes``: distinct, in ``[-(r+k), r+k)`` for k axes
                (one int under ``axes`` is one axis).
        Returns:
            rank ``r + 1`` (``r + k``) with 1 at the new positions, same type.
        """
        x = operand(self, tensor, "expandDims: tensor")
        label, given = axis_or_axes("expandDims", axis, axes)
        positions = axes_indices("expandDims", label, given, x.rank + len(given))
        shape = list(x.shape)
        for p in positions:
            shape.insert(p, 1)

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            return [np.expand_dims(arrays["tensor"], positions)]

        return record(self, "expandDims", name, {"tensor": x}, compute,
                      [(tuple(shape), x.dataType)], {"axes": positions, **VIEW})[0]

    def squeeze(self: GraphBuilder, tensor: Tensor | ArrayLike, *, axis: int | None = None,
                axes: Sequence[int] | int | None = None, name: str | None = None) -> Tensor:
        """``tensor`` without its size-1 dimensions: the one at ``axis``, those at ``axes``,
        or (neither given) all of them. A named dimension must have size 1 (checked at run
        time when unknown); squeezing all needs every dimension known.

        Args:
            tensor: ``[d0, ..., d(r-1)]``, any type.
            axis: in ``[-r, r)``; or ``axes``: distinct, each in ``[-r, r)`` (or one int);
                or neither.
        Returns:
            ``tensor``'s shape without those dimensions, same type.
        """
        x = operand(self, tensor, "squeeze: tensor")
        if axis is None and axes is None:
            if None in x.shape:
                raise ValueError(f"squeeze: tensor: shape {shape_text(x.shape)} has unknown "
                                 "dimensions: name the ones to squeeze (axis= or axes=)")
            label, positions = "tensor", tuple(i for i, d in enumerate(x.shape) if d == 1)
        else:
            label, given = axis_or_axes("squeeze", axis, axes)
            positions = axes_indices("squeeze", label, given, x.rank)
        where = f"squeeze: {label}"
        _check_ones(x.shape, positions, where)
        shape = tuple(d for i, d in enumerate(x.shape) if i not in positions)
        static = None not in x.shape
        checked = all(x.shape[p] is not None for p in positions)  # (here, once)

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            array = arrays["tensor"]
            if static:
                return [array.reshape(shape)]
            if not checked:
                _check_ones(array.shape, positions, where + naming(name))
            return [array.reshape([d for i, d in enumerate(array.shape)
                                   if i not in positions])]

        return record(self, "squeeze", name, {"tensor": x}, compute, [(shape, x.dataType)],
                      {"axes": positions, **VIEW})[0]


def _reshaped(shape: Shape, dims: tuple[int, ...], where: str) -> Shape:
    """The shape ``reshape`` makes of ``shape`` (None where not known yet), or a ValueError."""
    known = math.prod(d for d in dims if d != -1)
    if None in shape:
        return tuple(None if d == -1 else d for d in dims)
    size = math.prod(shape)  # type: ignore[arg-type]
    fits = (known != 0 and size % known == 0) if -1 in dims else known == size
    if not fits:
        raise ValueError(f"{where}: cannot reshape {shape_text(shape)} ({size} elements) to "
                         f"{list(dims)}")
    return tuple(size // known if d == -1 else d for d in dims)


def _permuted(graph: GraphBuilder, kind: str, name: str | None, x: Tensor,
              order: tuple[int, ...]) -> Tensor:
    def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
        return [np.transpose(arrays["tensor"], order)]

    return record(graph, kind, name, {"tensor": x}, compute,
                  [(tuple(x.shape[p] for p in order), x.dataType)], {"permutation": order, **VIEW})[0]


def _check_ones(shape: Sequence[int | None], positions: tuple[int, ...], where: str) -> None:
    for p in positions:
        if shape[p] is not None and shape[p] != 1:
            raise ValueError(f"{where}: dimension {p} of {shape_text(tuple(shape))} has size "
                             f"{shape[p]}, not 1")


def _transpose_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                    wanted: set[str]) -> dict[str, Tensor]:
    # The gradient goes back through the inverse permutation.
    inverse = tuple(int(i) for i in np.argsort(op.attrs["permutation"]))
    return {"tensor": ReshapingOps.transpose(graph, present(grads[0]), permutation=inverse)}


def _reshape_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                  wanted: set[str]) -> dict[str, Tensor]:
    source, grad = present(op.inputs["tensor"]), present(grads[0])
    if None not in source.shape:
        return {"tensor": ReshapingOps.reshape(graph, grad, shape=source.shape)}  # type: ignore[arg-type]
    return {"tensor": _reshape_like(graph, grad, source)}


def _reshape_like(graph: GraphBuilder, x: Tensor, like: Tensor) -> Tensor:
    """``x`` reshaped to ``like``'s shape at run time (its shape has unknown dimensions)."""
    return record(graph, "reshapeLike", None, {"x": x, "like": like},
                  lambda a: [a["x"].reshape(a["like"].shape)],
                  [(like.shape, x.dataType)], VIEW)[0]


def _reshape_like_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                       wanted: set[str]) -> dict[str, Tensor]:
    return {"x": _reshape_like(graph, present(grads[0]), present(op.inputs["x"]))}


def _expand_dims_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                      wanted: set[str]) -> dict[str, Tensor]:
    return {"tensor": ReshapingOps.squeeze(graph, present(grads[0]), axes=op.attrs["axes"])}


def _squeeze_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                  wanted: set[str]) -> dict[str, Tensor]:
    return {"tensor": ReshapingOps.expandDims(graph, present(grads[0]), axes=op.attrs["axes"])}


GRADIENT_RULES: dict[str, Rule] = {
    "reshape": _reshape_rule,  # reshape back (at run time while the shape is unknown)
    "reshapeLike": _reshape_like_rule,
    "transpose": _transpose_rule,
    "transposeTensor": _transpose_rule,
    "expandDims": _expand_dims_rule,  # each is the other's inverse
    "squeeze": _squeeze_rule,
}
