"""MPSGraph's softMaxCrossEntropy and LossReductionType.

``loss = reduction(-sum(labels ⊙ log softmax(source), axis))``, with ``log softmax`` as
``x - max - log(sum(exp(x - max)))`` (log-sum-exp), so large logits neither overflow nor
lose the small probabilities.

Result shapes. ``none`` (alias ``axis``): ``source``'s shape with ``axis`` as size 1.
``sum`` and ``mean``: Apple's header (MPSGraphLossOps.h) says both reduce "down to a scalar",
so the result is a rank-0 tensor, shape ``[]``. ``mean`` divides the sum by the number of
per-example losses (every element of the ``none`` result), as ``torch.nn.functional.
cross_entropy(reduction="mean")`` does for probability targets.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rnngraph.ops.activations import log_soft_max, log_softmax
from rnngraph.ops.arguments import present
from rnngraph.ops.arithmetic import fresh
from rnngraph.ops.operands import axis_index, operands, record, same_type
from rnngraph.ops.reductions import inverse_count, kept_shape
from rnngraph.shapes import compatible, shape_text

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rnngraph._typing import GraphBuilder, Rule, Shape
    from rnngraph.graph import Graph, Operation
    from rnngraph.ops.arithmetic import Operand
    from rnngraph.tensor import Tensor

OP = "softMaxCrossEntropy"


class LossReductionType(enum.Enum):
    """How ``softMaxCrossEntropy`` reduces the per-example losses (MPSGraphLossReductionType)."""

    none = 0
    """No reduction: ``source``'s shape with ``axis`` as size 1."""
    axis = none  # MPSGraph's older name for none: an alias, the same member
    sum = 1
    """The sum of every per-example loss, as a rank-0 tensor."""
    mean = 2
    """Their mean, as a rank-0 tensor."""


def _reduction(reuctionType: object, reductionType: object) -> LossReductionType:
    """The one reduction type given under Apple's label or its alias."""
    if reuctionType is not None and reductionType is not None:
        raise TypeError(f"{OP}: reuctionType: give reuctionType= or its alias reductionType=, "
                        "not both")
    given = reuctionType if reuctionType is not None else reductionType
    if given is None:
        raise TypeError(f"{OP}: reuctionType: required (rnngraph.LossReductionType.none, "
                        ".sum or .mean; reductionType= is accepted too)")
    if not isinstance(given, LossReductionType):
        raise TypeError(f"{OP}: reuctionType: expected a rnngraph.LossReductionType, "
                        f"got {given!r}")
    return given


def _same_shape(source: Tensor, labels: Tensor) -> Shape:
    """Equal shapes where known; the shape with what either knows."""
    if not compatible(source.shape, labels.shape):
        raise ValueError(f"{OP}: labels: expected source's shape {shape_text(source.shape)}, "
                         f"got {shape_text(labels.shape)}")
    return tuple(a if a is not None else b for a, b in zip(source.shape, labels.shape))


class LossOps:
    def softMaxCrossEntropy(self: GraphBuilder, source: Operand, *, labels: Operand,
                            axis: int, reuctionType: LossReductionType | None = None,
                            reductionType: LossReductionType | None = None,
                            name: str | None = None) -> Tensor:
        """Softmax cross-entropy along ``axis``:
        ``reduction(-sum(labels ⊙ log softmax(source, axis), axis))``.

        Args:
            source: logits, any shape ``[..., C, ...]`` (C along ``axis``), float32/float64.
            labels: the target distribution, ``source``'s shape and dataType (one-hot rows,
                or soft labels).
            axis: the class axis, an int in ``[-rank, rank)``.
            reuctionType: a ``LossReductionType`` (Apple's spelling; required);
                ``reductionType=`` is accepted as an alias (give exactly one).

        Returns:
            ``none``/``axis``: ``source``'s shape with ``axis`` as 1; ``sum``/``mean``: rank
            0 (``[]``, Apple's "down to a scalar"), the mean over the per-example losses.
        """
        reduction = _reduction(reuctionType, reductionType)
        tensors = operands(self, OP, {"source": source, "labels": labels})
        dtype = same_type(OP, tensors, floats_only=True)
        shape = _same_shape(tensors["source"], tensors["labels"])
        index = axis_index(OP, "axis", axis, len(shape))
        out_shape = kept_shape(shape, (index,)) if reduction is LossReductionType.none else ()
        # with every dimension known, _same_shape has checked them all, once
        static = all(None not in t.shape for t in tensors.values())

        def compute(arrays: dict[str, Any]) -> list[NDArray[Any]]:
            x, y = arrays["source"], arrays["labels"]
            if not static and x.shape != y.shape:
                raise ValueError(f"{OP}: labels: expected source's shape {list(x.shape)}, got "
                                 f"{list(y.shape)}")
            with np.errstate(all="ignore"):
                per = -np.sum(y * log_softmax(x, index), axis=index, keepdims=True)
                if reduction is LossReductionType.sum:
                    per = np.sum(per)
                elif reduction is LossReductionType.mean:  # of none: nan (np.mean would warn)
                    per = np.sum(per) / per.size
            return [fresh(per, dtype.numpy)]

        return record(self, OP, name, tensors, compute, [(out_shape, dtype)],
                      {"axis": index, "reduction": reduction})[0]


def _loss_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
               wanted: set[str]) -> dict[str, Tensor]:
    g = cast("Graph", graph)
    gradient, axis = present(grads[0]), op.attrs["axis"]
    source, labels = present(op.inputs["source"]), present(op.inputs["labels"])
    if op.attrs["reduction"] is LossReductionType.mean:
        others = tuple(i for i in range(len(source.shape)) if i != axis)
        gradient = g.multiplication(gradient, inverse_count(g, source, others))
    # the incoming gradient (rank 0, or 1 along axis) broadcasts over the class axis
    result = {}
    if "source" in wanted:  # d·(softmax(x)·sum(labels, axis) − labels)
        result["source"] = g.multiplication(gradient, g.subtraction(
            g.multiplication(g.softMax(source, axis=axis), g.reductionSum(labels, axis=axis)),
            labels))
    if "labels" in wanted:  # −d·log softmax(x)
        result["labels"] = g.negative(g.multiplication(gradient,
                                                       log_soft_max(g, source, axis)))
    return result


GRADIENT_RULES: dict[str, Rule] = {OP: _loss_rule}
