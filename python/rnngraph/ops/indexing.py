"""MPSGraph's oneHot and gather, with gather's gradient (a scatter-add).

``oneHot``: an index outside ``[0, depth)``, negative ones included, matches no position, so
its row is all ``offValue``. That is what MPSGraph computes (PyTorch's MPS ``one_hot``, which
calls it, returns such zero rows: pytorch/pytorch#170507) and what TensorFlow's one_hot
defines.

``gather``: indices must lie in ``[0, n)`` for the gathered dimension of size ``n``; MPSGraph
does not define other values, so rnngraph raises a ValueError at run time for any other.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rnngraph._native import core as _core
from rnngraph.dtypes import DataType
from rnngraph.ops.arguments import integer_argument, naming, present
from rnngraph.ops.operands import axis_index, data_type, operand, record
from rnngraph.shapes import shape_text

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike, NDArray

    from rnngraph._typing import GraphBuilder, Rule
    from rnngraph.graph import Operation
    from rnngraph.tensor import Tensor


class IndexingOps:
    def oneHot(self: GraphBuilder, withIndicesTensor: Tensor | ArrayLike, *, depth: int,
               axis: int = -1, dataType: DataType | DTypeLike = DataType.float32,
               onValue: float = 1.0, offValue: float = 0.0, name: str | None = None) -> Tensor:
        """One-hot vectors of length ``depth`` along a new dimension ``axis``: ``onValue``
        where the position equals the index, ``offValue`` elsewhere (an index outside
        ``[0, depth)`` gives a row of ``offValue``). Covers MPSGraph's overloads with and
        without ``axis`` (default -1: the new last dimension) and ``dataType`` (default
        float32) with ``onValue``/``offValue`` (default 1 and 0). No gradient.

        Args:
            withIndicesTensor: int32 or int64 ``[d0, ..., d(q-1)]``.
            depth: int >= 1.
            axis: in ``[-(q+1), q]``.
        Returns:
            ``[d0, ..., depth, ..., d(q-1)]`` (``depth`` at ``axis``) of ``dataType``.
        """
        indices = _indices(self, withIndicesTensor, "oneHot: withIndicesTensor")
        count = integer_argument("oneHot", "depth", depth, minimum=1)
        position = axis_index("oneHot", "axis", axis, indices.rank + 1)
        dtype = data_type("oneHot", "dataType", dataType)
        values = np.array([_fill_value("offValue", offValue, dtype),
                           _fill_value("onValue", onValue, dtype)], dtype.numpy)

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            indices = arrays["withIndicesTensor"]
            try:  # (positions made here: a depth too large to hold fails the run, by name)
                hot = indices[..., None] == np.arange(count)
            except ValueError as error:  # NumPy: "array is too big", "Maximum allowed size"
                raise MemoryError(f"oneHot: depth: {count} positions for each of "
                                  f"{indices.size} indices: {error}") from None
            return [np.ascontiguousarray(np.moveaxis(values[hot.view(np.uint8)], -1, position))]

        shape = list(indices.shape)
        shape.insert(position, count)
        return record(self, "oneHot", name, {"withIndicesTensor": indices}, compute,
                      [(tuple(shape), dtype)], {"depth": count, "axis": position})[0]

    def gather(self: GraphBuilder, withUpdatesTensor: Tensor | ArrayLike, *,
               indicesTensor: Tensor | ArrayLike, axis: int, batchDimensions: int = 0,
               name: str | None = None) -> Tensor:
        """Slices of ``withUpdatesTensor`` along ``axis`` picked by ``indicesTensor``:
        ``res[p.., i.., s..] = updates[p.., indices[b.., i..], s..]`` where the first
        ``batchDimensions`` dimensions ``b`` of the indices are those of the updates (MPSGraph's
        definition). An embedding lookup is ``gather(table [V, E], indicesTensor=[T, N],
        axis=0)`` -> ``[T, N, E]``. The gradient to the updates adds the incoming gradient's
        slices back at their indices (repeated indices accumulate); indices get none.

        Args:
            withUpdatesTensor: ``U = [u0, ..., u(r-1)]``, any type.
            indicesTensor: int32 or int64 ``[u0, ..., u(B-1), k...]`` with values in
                ``[0, u(axis))``.
            axis: in ``[-r, r)``, at least ``batchDimensions``.
            batchDimensions: ``B`` >= 0.
        Returns:
            ``U[:axis] + indices.shape[B:] + U[axis+1:]``, the type of the updates.
        """
        updates = operand(self, withUpdatesTensor, "gather: withUpdatesTensor")
        indices = _indices(self, indicesTensor, "gather: indicesTensor")
        batch = integer_argument("gather", "batchDimensions", batchDimensions, minimum=0)
        position = axis_index("gather", "axis", axis, updates.rank)
        if batch > min(position, indices.rank):
            raise ValueError(f"gather: batchDimensions: {batch} exceeds the axis {position} or "
                             f"the indices' rank {indices.rank}")
        shape = updates.shape[:position] + indices.shape[batch:] + updates.shape[position + 1:]
        leading = list(shape)
        for i in range(batch):  # the batch dimensions of updates and indices agree
            u, k = updates.shape[i], indices.shape[i]
            if u is not None and k is not None and u != k:
                raise ValueError(f"gather: indicesTensor: batch dimension {i} has size {k}, "
                                 f"the updates' {u} ({shape_text(indices.shape)} vs "
                                 f"{shape_text(updates.shape)})")
            leading[i] = u if u is not None else k
        suffix = naming(name)
        # the batch dimensions, all known here, were checked once above
        batch_checked = None not in updates.shape[:batch] + indices.shape[:batch]

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            u, k = arrays["withUpdatesTensor"], arrays["indicesTensor"]
            if not batch_checked:
                _check_batch(u.shape, k.shape, batch, suffix)
            _check_range(u.shape, k, position, suffix)
            if batch == 0:
                return [np.asarray(np.take(u, k, axis=position))]  # (rank 0: a scalar)
            return [_batched(u, k, position, batch)]

        return record(self, "gather", name,
                      {"withUpdatesTensor": updates, "indicesTensor": indices}, compute,
                      [(tuple(leading), updates.dataType)],
                      {"axis": position, "batchDimensions": batch})[0]


def _indices(graph: GraphBuilder, value: object, where: str) -> Tensor:
    tensor = operand(graph, value, where)
    if tensor.dataType not in (DataType.int32, DataType.int64):
        raise TypeError(f"{where}: expected int32 or int64 indices, got "
                        f"{tensor.dataType.value}")
    return tensor


def _fill_value(label: str, value: object, dtype: DataType) -> float:
    """``onValue``/``offValue``: a number that ``dataType`` holds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"oneHot: {label}: expected a number, got {value!r}")
    if dtype.is_float:
        return float(value)
    whole = int(value) if isinstance(value, numbers.Integral) else float(value)
    limits = np.iinfo(dtype.numpy)
    if not (isinstance(whole, int) or whole.is_integer()) or not (
            limits.min <= whole <= limits.max):
        raise ValueError(f"oneHot: {label}: {value!r} is not a {dtype.value} value")
    return int(whole)


def _check_batch(shape: tuple[int, ...], indices: tuple[int, ...], batch: int,
                 suffix: str) -> None:
    """Run-time check, while some are unknown at build time: the batch dimensions agree."""
    if shape[:batch] != indices[:batch]:
        raise ValueError(f"gather: indicesTensor{suffix}: batch dimensions {list(indices[:batch])}"
                         f" differ from the updates' {list(shape[:batch])}")


def _check_range(shape: tuple[int, ...], indices: NDArray[Any], axis: int, suffix: str) -> None:
    """Run-time check (it depends on the data): every index lies in ``[0, n)``."""
    n = shape[axis]
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        bad = indices[(indices < 0) | (indices >= n)].flat[0]
        raise ValueError(f"gather: indicesTensor{suffix}: index {bad} is out of range [0, {n}) for "
                         f"axis {axis} of withUpdatesTensor {list(shape)}")


def _batched(updates: NDArray[Any], indices: NDArray[Any], axis: int,
             batch: int) -> NDArray[Any]:
    """gather with ``batch`` > 0 batch dimensions b, middle dimensions m and the rest s."""
    count, k = math.prod(updates.shape[:batch]), math.prod(indices.shape[batch:])
    # updates [b.., m.., n, s..] -> [b, n, m.., s..]; pick [b, K] -> [b, K, m.., s..]
    moved = np.moveaxis(updates.reshape((count,) + updates.shape[batch:]), axis - batch + 1, 1)
    taken = moved[np.arange(count)[:, None], indices.reshape(count, k)]
    taken = np.moveaxis(taken, 1, 1 + axis - batch)  # [b, m.., K, s..]
    return np.ascontiguousarray(taken).reshape(
        updates.shape[:axis] + indices.shape[batch:] + updates.shape[axis + 1:])


# Up to this many target rows, gather's gradient is a product with a one-hot matrix (its
# cost grows with the targets; the sort's does not): the crossover of the two, measured on
# this machine, lies near 200 targets for 256-wide rows.
FEW_TARGETS = 128


def _scatter_add(gradient: NDArray[Any], indices: NDArray[Any], shape: tuple[int, ...],
                 axis: int, batch: int) -> NDArray[Any]:
    """The adjoint of gather: zeros of ``shape`` (the updates') with every slice of
    ``gradient`` added at its index; repeated indices accumulate."""
    count, n = math.prod(shape[:batch]), shape[axis]
    middle, rest = math.prod(shape[batch:axis]), math.prod(shape[axis + 1:])
    k = math.prod(indices.shape[batch:])
    # gradient [b.., m.., k.., s..] -> rows [b*K, m*s]; row (b, j) goes to row b*n + index.
    rows = gradient.reshape(count, middle, k, rest).transpose(0, 2, 1, 3).reshape(
        count * k, middle * rest)
    targets = (np.arange(count)[:, None] * n + indices.reshape(count, k)).reshape(-1)
    # (Only finite rows: a product would add 0·inf = NaN into every target row.)
    by_product = (bool(rows.size) and count * n <= FEW_TARGETS and gradient.dtype.kind == "f"
                  and bool(np.isfinite(rows).all()))
    if by_product:
        # Few target rows (a character vocabulary): one product onehotᵀ · rows on rnngraph's
        # gemm. [2400, 256] rows into 36 targets: 0.20 ms against 1.29 ms for the sort below
        # (2 threads, this 2-core machine).
        hot = (targets == np.arange(count * n)[:, None]).astype(gradient.dtype)
        summed = _core.matmul(hot, np.ascontiguousarray(rows))
    else:
        summed = np.zeros((count * n, middle * rest), gradient.dtype)
    if rows.size and not by_product:
        # Sum the rows of each target in one pass: sort by target, reduce each run of equals
        # (several times faster than np.add.at).
        order = np.argsort(targets, kind="stable")
        ordered = targets[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        summed[ordered[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    # rows [b*n, m*s] -> [b, m, n, s] -> the updates' shape
    return np.ascontiguousarray(summed.reshape(count, n, middle, rest).transpose(0, 2, 1, 3)
                                ).reshape(shape)


def _scatter(graph: GraphBuilder, gradient: Tensor, op: Operation) -> Tensor:
    """``gatherGradient``: the scatter-add of ``gradient`` into the updates' shape. The
    updates are an input (for their shape) only while that shape has unknown dimensions."""
    updates, indices = present(op.inputs["withUpdatesTensor"]), present(op.inputs["indicesTensor"])
    axis, batch = op.attrs["axis"], op.attrs["batchDimensions"]
    static = updates.shape  # the closure keeps no Tensor
    known = None not in static
    inputs = {"gradient": gradient, "indicesTensor": indices}
    if not known:
        inputs["like"] = updates

    def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
        shape = cast("tuple[int, ...]", static) if known else arrays["like"].shape
        return [_scatter_add(arrays["gradient"], arrays["indicesTensor"], shape, axis, batch)]

    return record(graph, "gatherGradient", None, inputs, compute,
                  [(updates.shape, gradient.dataType)],
                  {"axis": axis, "batchDimensions": batch})[0]


def _gather_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                 wanted: set[str]) -> dict[str, Tensor]:
    return {"withUpdatesTensor": _scatter(graph, present(grads[0]), op)}


def _gather_back(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                 wanted: set[str]) -> dict[str, Tensor]:
    """d(gatherGradient)/d(gradient): gather the incoming gradient at the same indices."""
    return {"gradient": IndexingOps.gather(graph, present(grads[0]),
                                           indicesTensor=present(op.inputs["indicesTensor"]),
                                           axis=op.attrs["axis"],
                                           batchDimensions=op.attrs["batchDimensions"])}


GRADIENT_RULES: dict[str, Rule] = {
    "oneHot": lambda graph, op, grads, wanted: {},  # integer indices: no gradient
    "gather": _gather_rule,  # scatter-add ...
    "gatherGradient": _gather_back,  # ... whose gradient gathers again
}
