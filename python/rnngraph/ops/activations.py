"""MPSGraph's sigmoid, tanh, reLU and softMax, and the internal logSoftMax the loss uses.

sigmoid, tanh and softMax take float32 or float64; reLU takes ints too. softMax and
logSoftMax subtract the maximum along ``axis`` first, so large inputs neither overflow nor
lose the small probabilities.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.ops.arithmetic import elementwise_rule, locally_constant, unary
from rnngraph.ops.operands import axis_index, operand, same_type

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rnngraph._typing import GraphBuilder, Rule
    from rnngraph.graph import Graph
    from rnngraph.ops.arithmetic import Operand
    from rnngraph.tensor import Tensor


def _sigmoid(x: NDArray[Any]) -> Any:
    # 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) below: e^-|x| never overflows, and tiny values
    # keep their relative precision.
    z = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + z), z / (1 + z))


def _shifted(x: NDArray[Any], axis: int) -> NDArray[Any]:
    """``x - max(x, axis)`` (a non-finite maximum shifts by 0: -inf rows give nan, as the
    plain formula does)."""
    top = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    return x - np.where(np.isfinite(top), top, 0)


def softmax(x: NDArray[Any], axis: int) -> Any:
    """``exp(x) / sum(exp(x), axis)``, computed on ``x - max``."""
    with np.errstate(all="ignore"):
        e = np.exp(_shifted(x, axis))
        e /= np.sum(e, axis=axis, keepdims=True)
    return e


def log_softmax(x: NDArray[Any], axis: int) -> Any:
    """``x - log(sum(exp(x), axis))`` (log-sum-exp on ``x - max``)."""
    with np.errstate(all="ignore"):
        s = _shifted(x, axis)
        s -= np.log(np.sum(np.exp(s), axis=axis, keepdims=True))
    return s


def _softmax_op(graph: GraphBuilder, kind: str, name: str | None, value: Operand,
                axis: object, function: Any) -> Tensor:
    """softMax (``kind``) or the internal logSoftMax of ``value`` along ``axis``."""
    tensor = operand(graph, value, f"{kind}: with_")
    same_type(kind, {"with_": tensor}, floats_only=True)  # (before the axis, as unary would)
    index = axis_index(kind, "axis", axis, len(tensor.shape))
    return unary(graph, kind, name, tensor, lambda x: function(x, index), floats_only=True,
                 attrs={"axis": index})


def log_soft_max(graph: GraphBuilder, tensor: Tensor, axis: int) -> Tensor:
    """Internal: ``log(softMax(tensor, axis))``, numerically stable (softMaxCrossEntropy's
    gradient for its labels)."""
    return _softmax_op(graph, "logSoftMax", None, tensor, axis, log_softmax)


class ActivationOps:
    def sigmoid(self: GraphBuilder, with_: Operand, name: str | None = None) -> Tensor:
        """``1 / (1 + e^-with_)`` elementwise; same shape; float32 or float64."""
        return unary(self, "sigmoid", name, with_, _sigmoid, floats_only=True)

    def tanh(self: GraphBuilder, with_: Operand, name: str | None = None) -> Tensor:
        """Hyperbolic tangent elementwise; same shape; float32 or float64."""
        return unary(self, "tanh", name, with_, np.tanh, floats_only=True)

    def reLU(self: GraphBuilder, with_: Operand, name: str | None = None) -> Tensor:
        """``max(with_, 0)`` elementwise; same shape and dataType (ints too)."""
        return unary(self, "reLU", name, with_, lambda x: np.maximum(x, 0), floats_only=False)

    def softMax(self: GraphBuilder, with_: Operand, *, axis: int,
                name: str | None = None) -> Tensor:
        """``exp(with_) / sum(exp(with_), axis)``; same shape; float32 or float64. ``axis``:
        an int in ``[-rank, rank)``."""
        return _softmax_op(self, "softMax", name, with_, axis, softmax)


def _relu_part(g: Graph, d: Tensor, x: dict[str, Tensor], y: Tensor) -> Tensor:
    mask = locally_constant(g, x, lambda a: a["with_"] > 0, y.shape, y.dataType)
    return g.multiplication(d, mask)


def _softmax_part(g: Graph, d: Tensor, x: dict[str, Tensor], y: Tensor) -> Tensor:
    # dx = y ⊙ (d − sum(d ⊙ y, axis))
    axis: int = y.op.attrs["axis"]
    return g.multiplication(y, g.subtraction(
        d, g.reductionSum(g.multiplication(d, y), axis=axis)))


def _log_softmax_part(g: Graph, d: Tensor, x: dict[str, Tensor], y: Tensor) -> Tensor:
    # dx = d − softmax(x) ⊙ sum(d, axis)
    axis: int = y.op.attrs["axis"]
    return g.subtraction(d, g.multiplication(g.softMax(x["with_"], axis=axis),
                                             g.reductionSum(d, axis=axis)))


GRADIENT_RULES: dict[str, Rule] = {
    # dσ = d ⊙ y(1 − y)
    "sigmoid": elementwise_rule(with_=lambda g, d, x, y: g.multiplication(
        d, g.multiplication(y, g.subtraction(1.0, y)))),
    # dtanh = d ⊙ (1 − y²)
    "tanh": elementwise_rule(with_=lambda g, d, x, y: g.multiplication(
        d, g.subtraction(1.0, g.square(y)))),
    "reLU": elementwise_rule(with_=_relu_part),
    "softMax": elementwise_rule(with_=_softmax_part),
    "logSoftMax": elementwise_rule(with_=_log_softmax_part),
}
