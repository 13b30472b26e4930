"""MPSGraph's reductionSum and mean. The reduced axes stay as size 1, as MPSGraph keeps them:
``reductionSum`` of ``[2, 3, 4]`` over ``axes=[0, 2]`` is ``[1, 3, 1]``.

Both take float32, float64, int32 and int64 and keep the dataType. An integer sum wraps
around like the type; an integer mean truncates toward zero, as integer division does, and
is exact even where the sum would pass the type's range.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.ops.arithmetic import elementwise_rule, fresh, locally_constant
from rnngraph.ops.operands import axes_indices, axis_or_axes, broadcast_like, operand, record

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rnngraph._typing import GraphBuilder, Rule, Shape
    from rnngraph.graph import Graph
    from rnngraph.ops.arithmetic import Operand
    from rnngraph.tensor import Tensor


def kept_shape(shape: Shape, axes: tuple[int, ...]) -> Shape:
    """``shape`` with ``axes`` reduced to size 1."""
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def inverse_count(graph: GraphBuilder, tensor: Tensor, axes: tuple[int, ...]) -> Tensor:
    """Internal: ``1 / (number of elements of tensor along axes)`` as a rank-0 tensor of its
    dataType, read from the run-time shape (inf for none)."""
    def value(arrays: dict[str, Any]) -> float:
        count = math.prod(arrays["x"].shape[i] for i in axes)
        return 1.0 / count if count else math.inf

    return locally_constant(graph, {"x": tensor}, value, (), tensor.dataType)


def _mean(x: NDArray[Any], axes: tuple[int, ...]) -> Any:
    count = math.prod(x.shape[i] for i in axes)
    if x.dtype.kind == "f":  # a mean of no elements is 0/0 = nan (np.mean would warn)
        return np.sum(x, axis=axes, keepdims=True, dtype=x.dtype) / count
    if count == 0:
        raise ValueError("mean: axes: the integer mean of no elements")
    # The sum itself can pass int64's range where the mean cannot: with x = count·q + r
    # (0 <= r < count), floor(sum/count) = Σq + floor(Σr / count), and neither Σq nor Σr
    # (< count²) overflows.
    quotients, remainders = np.divmod(x.astype(np.int64), count)
    floor, rest = np.divmod(np.sum(remainders, axis=axes, keepdims=True, dtype=np.int64), count)
    floor += np.sum(quotients, axis=axes, keepdims=True, dtype=np.int64)
    # truncation toward zero, as C's integer division: a negative mean with a remainder is
    # one above its floor
    return floor + ((floor < 0) & (rest != 0))


def _reduce(graph: GraphBuilder, op: str, label: str, value: Operand, axes: object,
            axes_label: str, name: str | None, function: Any) -> Tensor:
    """``function(array, axes)`` of ``value`` (under ``label``), its ``axes`` (given under
    ``axes_label``) read by ``axes_indices``."""
    tensor = operand(graph, value, f"{op}: {label}")
    found = axes_indices(op, axes_label, axes, len(tensor.shape))
    dtype = tensor.dataType

    def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
        with np.errstate(all="ignore"):
            return [fresh(function(arrays[label], found), dtype.numpy)]

    return record(graph, op, name, {label: tensor}, compute,
                  [(kept_shape(tensor.shape, found), dtype)], {"axes": found})[0]


class ReductionOps:
    def reductionSum(self: GraphBuilder, with_: Operand, *, axis: int | None = None,
                     axes: list[int] | tuple[int, ...] | int | None = None,
                     name: str | None = None) -> Tensor:
        """The sum of ``with_`` over one ``axis`` or over ``axes`` (exactly one of the two;
        ints in ``[-rank, rank)``, distinct; one int under ``axes`` is one axis). Returns ``with_``'s shape with the reduced axes
        as size 1, and its dataType.

        ``reductionSum(x [2, 3, 4], axes=[0, 2])`` -> ``[1, 3, 1]``."""
        if (axis is None) == (axes is None):  # (its own wording for exactly one)
            raise TypeError("reductionSum: axes: expected exactly one of axis= and axes=, "
                            f"got {'neither' if axis is None else 'both'}")
        label, given = axis_or_axes("reductionSum", axis, axes)
        return _reduce(self, "reductionSum", "with_", with_, given, label, name,
                       lambda x, found: np.sum(x, axis=found, keepdims=True, dtype=x.dtype))

    def mean(self: GraphBuilder, of: Operand, *, axes: list[int] | tuple[int, ...] | int,
             name: str | None = None) -> Tensor:
        """The mean of ``of`` over ``axes`` (distinct ints in ``[-rank, rank)``, or one int). Returns
        ``of``'s shape with the reduced axes as size 1, and its dataType (an integer mean
        truncates toward zero)."""
        return _reduce(self, "mean", "of", of, axes, "axes", name, _mean)


def _mean_part(g: Graph, d: Tensor, x: dict[str, Tensor], y: Tensor) -> Tensor:
    # d/dx mean = d divided by the reduced axes' element count, broadcast back over them
    # (divided first: one full-size pass)
    axes: tuple[int, ...] = y.op.attrs["axes"]
    return broadcast_like(g, g.multiplication(d, inverse_count(g, x["of"], axes)), x["of"])


GRADIENT_RULES: dict[str, Rule] = {
    # d/dx sum = d broadcast back over the reduced axes
    "reductionSum": elementwise_rule(with_=lambda g, d, x, y: broadcast_like(g, d, x["with_"])),
    "mean": elementwise_rule(of=_mean_part),
}
