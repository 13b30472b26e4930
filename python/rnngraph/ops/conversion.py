"""MPSGraph's ``cast(_:to:name:)``: a tensor converted to another data type.

Float to integer truncates toward zero, as Metal's conversions do (the Metal Shading
Language converts to integers "round toward zero", without saturation). A value that no
integer of the target type holds (NaN, infinity, out of range) has no defined result there,
so rnngraph refuses it at run time with a ValueError rather than return garbage; so does an
int64 to int32 cast of a value int32 does not hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.ops.arguments import naming, present
from rnngraph.ops.operands import data_type, operand, record

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike, NDArray

    from rnngraph._typing import GraphBuilder, Rule
    from rnngraph.dtypes import DataType
    from rnngraph.graph import Operation
    from rnngraph.tensor import Tensor


class ConversionOps:
    def cast(self: GraphBuilder, tensor: Tensor | ArrayLike, *, to: DataType | DTypeLike,
             name: str | None = None) -> Tensor:
        """``tensor`` converted to the data type ``to`` (``rg.float32``, ``float64``,
        ``int32`` or ``int64``), shaped like it.

        Float to integer truncates toward zero (``2.7 -> 2``, ``-2.7 -> -2``); NaN, infinity
        and values the integer type does not hold raise a ValueError at run time, as does an
        int64 value outside int32 cast to int32. A float-to-float cast passes the gradient
        back (cast to the input's type); integer paths carry none.

        Args:
            tensor: any shape ``[...]``, any of the four types.
            to: the result's data type.
        Returns:
            ``[...]`` of type ``to``.
        """
        x = operand(self, tensor, "cast: tensor")
        target = data_type("cast", "to", to)
        where = f"cast: tensor{naming(name)}"

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            return [converted(arrays["tensor"], target.numpy, where)]

        return record(self, "cast", name, {"tensor": x}, compute, [(x.shape, target)],
                      {"to": target})[0]


def converted(array: NDArray[Any], dtype: np.dtype[Any], where: str) -> NDArray[Any]:
    """A fresh copy of ``array`` as ``dtype`` (see the module docstring for integers)."""
    if dtype.kind == "f":
        with np.errstate(over="ignore"):  # float64 -> float32 overflows to inf, as IEEE says
            return array.astype(dtype)
    bits = dtype.itemsize * 8
    # -2**(bits-1) and 2**(bits-1) are exact in float32 and float64 (the type's max is not).
    low, high = -(2 ** (bits - 1)), 2 ** (bits - 1)
    if array.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            wrong = ~np.isfinite(array) | (np.trunc(array) < low) | (array >= high)
    elif array.dtype.itemsize > dtype.itemsize:
        wrong = (array < low) | (array >= high)
    else:
        return array.astype(dtype)
    if wrong.any():
        bad = array[wrong].flat[0].item()
        raise ValueError(f"{where}: {bad!r} has no {dtype.name} value (casts to integers "
                         "truncate toward zero and do not saturate)")
    return array.astype(dtype)  # NumPy's float -> int conversion truncates toward zero


def _cast_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
               wanted: set[str]) -> dict[str, Tensor]:
    source, grad = present(op.inputs["tensor"]), present(grads[0])
    if not source.dataType.is_float or not grad.dataType.is_float:
        return {}  # integer paths carry no gradient
    return {"tensor": ConversionOps.cast(graph, grad, to=source.dataType)}


GRADIENT_RULES: dict[str, Rule] = {
    "cast": _cast_rule,  # float -> float: cast the gradient back to the input's type
}
