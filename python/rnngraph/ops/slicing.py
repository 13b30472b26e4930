"""MPSGraph's sliceTensor and concatTensors, with their gradient rules.

Their gradients are two internal op kinds, each the other's inverse, so that gradients of
gradients work too: ``sliceTensorGradient`` puts a slice's gradient into zeros shaped like the
sliced tensor (its own gradient is the slice again), and ``concatTensorsGradient`` splits a
concatenation's gradient into one piece per input (its own gradient concatenates them).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.ops.arguments import integer_argument, naming, present
from rnngraph.ops.operands import (
    VIEW,
    axis_index,
    broadcast_shapes,
    operand,
    operands,
    record,
    same_type,
    unbroadcast,
    zeros_like,
)
from rnngraph.shapes import shape_text
from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from rnngraph._typing import GraphBuilder, Rule, Shape
    from rnngraph.graph import Operation


class SlicingOps:
    def sliceTensor(self: GraphBuilder, tensor: Tensor | ArrayLike, *, dimension: int,
                    start: int, length: int, name: str | None = None) -> Tensor:
        """``length`` consecutive entries of ``tensor`` along ``dimension``, from ``start``
        (negative: counted from the end of that dimension). The slice must lie inside the
        dimension (checked at run time when its size is unknown).

        Args:
            tensor: ``[..., n, ...]`` (``n`` at ``dimension``), any type.
            dimension: in ``[-r, r)``.
            start: in ``[-n, n]``; ``length`` >= 0 with ``start + length <= n``.
        Returns:
            ``[..., length, ...]``, same type.
        """
        x = operand(self, tensor, "sliceTensor: tensor")
        axis = axis_index("sliceTensor", "dimension", dimension, x.rank)
        first = integer_argument("sliceTensor", "start", start)
        count = integer_argument("sliceTensor", "length", length, minimum=0)
        size = x.shape[axis]
        suffix = naming(name)
        known: tuple[slice, ...] | None = None  # the entries, when checked here once
        if size is not None:
            low = _bounds(size, first, count)
            known = _along(axis, low, low + count)

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            array = arrays["tensor"]
            if known is not None:
                return [array[known]]
            low = _bounds(array.shape[axis], first, count, suffix)
            return [array[_along(axis, low, low + count)]]

        shape = x.shape[:axis] + (count,) + x.shape[axis + 1:]
        return record(self, "sliceTensor", name, {"tensor": x}, compute, [(shape, x.dataType)],
                      {"dimension": axis, "start": first, "length": count, **VIEW})[0]

    def concatTensors(self: GraphBuilder, tensors: Sequence[Tensor | ArrayLike], *,
                      dimension: int, name: str | None = None) -> Tensor:
        """The ``tensors`` joined along ``dimension``. They share a type and a rank; their
        other dimensions broadcast against each other, as MPSGraph allows.

        Args:
            tensors: a list of ``[..., n_i, ...]`` (``n_i`` at ``dimension``), one type.
            dimension: in ``[-r, r)``.
        Returns:
            ``[..., sum(n_i), ...]``: the other dimensions broadcast, same type.
        """
        if isinstance(tensors, (Tensor, str, bytes, np.ndarray)) or not isinstance(
                tensors, Sequence):
            raise TypeError(f"concatTensors: tensors: expected a list of Tensors, got "
                            f"{type(tensors).__name__}")
        if not tensors:
            raise ValueError("concatTensors: tensors: expected at least one tensor")
        inputs = operands(self, "concatTensors", {f"tensors/{i}": t for i, t in enumerate(tensors)})
        dtype = same_type("concatTensors", inputs)
        first = next(iter(inputs.values()))
        for label, t in inputs.items():
            if t.rank != first.rank:
                raise ValueError(f"concatTensors: {label}: expected rank {first.rank} like "
                                 f"tensors/0, got shape {shape_text(t.shape)}")
        axis = axis_index("concatTensors", "dimension", dimension, first.rank)
        sizes = [t.shape[axis] for t in inputs.values()]
        shapes = {label: t.shape for label, t in inputs.items()}
        around = _joined(shapes, axis)
        total = None if None in sizes else sum(d for d in sizes if d is not None)
        shape = around[:axis] + (total,) + around[axis + 1:]
        suffix, labels = naming(name), list(inputs)  # the closure keeps no Tensor
        # With every dimension but the joined one known, the broadcast was checked here,
        # once, and which parts it stretches is known.
        static = all(None not in s[:axis] + s[axis + 1:] for s in shapes.values())
        stretched = [static and _outside(s, axis) != around for s in shapes.values()]

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            parts = [arrays[label] for label in labels]
            if static:
                joined, stretch = around, stretched
            else:
                joined = _joined({label: p.shape for label, p in zip(labels, parts)}, axis,
                                 suffix)
                stretch = [_outside(p.shape, axis) != joined for p in parts]
            return [np.concatenate(
                [np.broadcast_to(p, joined[:axis] + (p.shape[axis],) + joined[axis + 1:])
                 if s else p for p, s in zip(parts, stretch)], axis=axis)]

        return record(self, "concatTensors", name, inputs, compute, [(shape, dtype)],
                      {"dimension": axis})[0]


def _bounds(size: int, start: int, length: int, suffix: str = "") -> int:
    """The slice's first index (``start`` counted from the end when negative), checked."""
    low = start + size if start < 0 else start
    if not 0 <= low <= size:
        raise ValueError(f"sliceTensor: start{suffix}: {start} is out of range for a dimension of size "
                         f"{size}")
    if low + length > size:
        raise ValueError(f"sliceTensor: length{suffix}: {length} entries from {low} pass the end of a "
                         f"dimension of size {size}")
    return low


def _along(axis: int, low: int, high: int) -> tuple[slice, ...]:
    return (slice(None),) * axis + (slice(low, high),)


def _outside(shape: Shape, axis: int) -> Shape:
    """``shape`` with its size along ``axis`` set to 1."""
    return shape[:axis] + (1,) + shape[axis + 1:]


def _joined(shapes: dict[str, Shape], axis: int, suffix: str = "") -> Shape:
    """The broadcast of ``shapes`` (by label, one rank) in every dimension but ``axis`` (that
    one 1): None where unknown; a mismatch names the op and the first tensor that differs."""
    try:
        return broadcast_shapes("concatTensors", {label: _outside(s, axis)
                                                  for label, s in shapes.items()})
    except ValueError:
        raise ValueError(_mismatch(shapes, axis, suffix)) from None


def _mismatch(shapes: dict[str, Shape], axis: int, suffix: str) -> str:
    """The error of ``shapes`` that do not broadcast outside ``axis``: it names the first
    tensor whose size differs from the first known size (not 1) of a dimension."""
    odd = "tensors"
    for i in (i for i in range(len(next(iter(shapes.values())))) if i != axis):
        dims = [s[i] for s in shapes.values()]
        known = [d for d in dims if d is not None and d != 1]
        differ = [label for label, d in zip(shapes, dims) if d not in (None, 1, *known[:1])]
        if differ:
            odd = differ[0]
            break
    listed = ", ".join(f"{label} {shape_text(s)}" for label, s in shapes.items())
    return (f"concatTensors: {odd}{suffix}: does not broadcast against the others outside "
            f"dimension {axis}: {listed}")


# --- gradients -----------------------------------------------------------------------------

def _pad(graph: GraphBuilder, gradient: Tensor, like: Tensor, dimension: int, start: int,
         length: int) -> Tensor:
    """``sliceTensorGradient``: ``gradient`` (a slice's) placed into zeros shaped like the
    sliced tensor ``like``, which is an input only while its size along ``dimension`` is
    unknown."""
    axis, size = dimension, like.shape[dimension]
    inputs = {"gradient": gradient} if size is not None else {"gradient": gradient, "like": like}
    known = _bounds(size, start, length) if size is not None else 0  # (the slice checked it)

    def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
        g = arrays["gradient"]
        if size is not None:
            n, low = size, known
        else:
            n = arrays["like"].shape[axis]
            low = _bounds(n, start, length)
        padded = np.zeros(g.shape[:axis] + (n,) + g.shape[axis + 1:], g.dtype)
        padded[_along(axis, low, low + length)] = g
        return [padded]

    shape = gradient.shape[:axis] + (size,) + gradient.shape[axis + 1:]
    return record(graph, "sliceTensorGradient", None, inputs, compute,
                  [(shape, gradient.dataType)],
                  {"dimension": axis, "start": start, "length": length})[0]


def _split(graph: GraphBuilder, gradient: Tensor, op: Operation) -> list[Tensor]:
    """``concatTensorsGradient``: ``gradient`` (of the concatenation ``op``) cut into one
    piece per input along the dimension; the inputs are its inputs too (for their sizes)
    only while a size is unknown."""
    axis, parts = op.attrs["dimension"], list(op.inputs.values())
    sizes = [present(t).shape[axis] for t in parts]
    inputs, labels = {"gradient": gradient}, list(op.inputs)
    if None in sizes:
        inputs.update({label: present(t) for label, t in op.inputs.items()})

    def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
        g = arrays["gradient"]
        counts = sizes if None not in sizes else [arrays[k].shape[axis] for k in labels]
        ends = np.cumsum([0, *counts])
        return [g[_along(axis, int(lo), int(hi))] for lo, hi in itertools.pairwise(ends)]

    return record(graph, "concatTensorsGradient", None, inputs, compute,
                  [(gradient.shape[:axis] + (n,) + gradient.shape[axis + 1:], gradient.dataType)
                   for n in sizes], {"dimension": axis, **VIEW})


def _concat_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                 wanted: set[str]) -> dict[str, Tensor]:
    pieces = _split(graph, present(grads[0]), op)
    # A broadcast input gets its piece summed over the broadcast dimensions.
    return {label: unbroadcast(graph, piece, present(op.inputs[label]))
            for label, piece in zip(op.inputs, pieces) if label in wanted}


def _split_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                wanted: set[str]) -> dict[str, Tensor]:
    parts = [g if g is not None else zeros_like(graph, t) for g, t in zip(grads, op.outputs)]
    return {"gradient": SlicingOps.concatTensors(graph, parts,
                                                 dimension=op.attrs["dimension"])}


def _slice_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                wanted: set[str]) -> dict[str, Tensor]:
    a = op.attrs
    return {"tensor": _pad(graph, present(grads[0]), present(op.inputs["tensor"]),
                           dimension=a["dimension"], start=a["start"], length=a["length"])}


def _pad_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
              wanted: set[str]) -> dict[str, Tensor]:
    return {"gradient": SlicingOps.sliceTensor(graph, present(grads[0]), **op.attrs)}


GRADIENT_RULES: dict[str, Rule] = {
    "sliceTensor": _slice_rule,  # pad with zeros ...
    "sliceTensorGradient": _pad_rule,  # ... whose gradient is the slice
    "concatTensors": _concat_rule,  # split into pieces ...
    "concatTensorsGradient": _split_rule,  # ... whose gradients concatenate
}
