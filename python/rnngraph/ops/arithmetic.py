"""MPSGraph's elementwise arithmetic (addition, subtraction, multiplication, division, square,
squareRoot, exponent, logarithm, negative, clamp, select) and matrixMultiplication.

Operands of one op share a dataType (a Python number takes the others'); the elementwise ops
broadcast like NumPy. Floats give IEEE results (``logarithm(0) = -inf``, ``0/0 = nan``), as
MPSGraph does. Integer division truncates toward zero, as in C (``-7 / 2 = -3``); an integer
zero divisor is an error at run time.

Also what the elementwise families share: ``elementwise`` and ``unary`` (the recorders),
``locally_constant`` (the one internal op for 0/1 masks and counts: zero gradient) and
``elementwise_rule`` (a gradient rule from one expression per input).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from rnngraph._native import core as _core
from rnngraph.ops.arguments import present
from rnngraph.ops.operands import (
    broadcast_shapes,
    operand,
    operands,
    record,
    same_type,
    unbroadcast,
)
from rnngraph.ops.reshaping import ReshapingOps
from rnngraph.shapes import shape_text

if TYPE_CHECKING:
    from typing import TypeAlias

    from numpy.typing import ArrayLike, NDArray

    from rnngraph._typing import GraphBuilder, Rule, RunArrays, Shape
    from rnngraph.dtypes import DataType
    from rnngraph.graph import Graph, Operation
    from rnngraph.tensor import Tensor

    # An op argument: a Tensor of the graph, or a Python number, list or tuple of numbers or
    # NumPy array (a constant).
    Operand: TypeAlias = Tensor | ArrayLike
    # A gradient expression: (graph, incoming gradient, the op's inputs by label, its output).
    Part: TypeAlias = Callable[[Graph, Tensor, dict[str, Tensor], Tensor], Tensor]


def fresh(result: Any, dtype: np.dtype[Any]) -> NDArray[Any]:
    """A computed result as an ndarray of ``dtype`` (NumPy returns a scalar for rank 0)."""
    if type(result) is np.ndarray and result.dtype == dtype:
        return result
    return np.asarray(result, dtype)


def elementwise(graph: GraphBuilder, op: str, name: str | None, tensors: dict[str, Tensor],
                function: Callable[..., Any], dtype: DataType,
                attrs: dict[str, Any] | None = None) -> Tensor:
    """Record ``function(*arrays)`` of ``tensors`` (by label, in argument order) as op kind
    ``op`` (with ``attrs``): its shape is their NumPy broadcast. Unknown dims are checked
    again at run time."""
    labels = tuple(tensors)
    shape = broadcast_shapes(op, {label: t.shape for label, t in tensors.items()})
    numpy_dtype = dtype.numpy
    dynamic = len(labels) > 1 and any(None in t.shape for t in tensors.values())

    def compute(arrays: RunArrays) -> list[NDArray[Any]]:
        args = [arrays[label] for label in labels]
        if dynamic:
            _check_broadcast(op, labels, args)
        with np.errstate(all="ignore"):  # IEEE inf and nan, silently, as MPSGraph gives them
            return [fresh(function(*args), numpy_dtype)]

    return record(graph, op, name, tensors, compute, [(shape, dtype)], attrs)[0]


def _check_broadcast(op: str, labels: tuple[str, ...], arrays: list[NDArray[Any]]) -> None:
    try:
        np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shapes = ", ".join(f"{label} {list(a.shape)}" for label, a in zip(labels, arrays))
        raise ValueError(f"{op}: shapes do not broadcast at run time: {shapes}") from None


def unary(graph: GraphBuilder, op: str, name: str | None, value: Operand,
          function: Callable[[Any], Any], floats_only: bool,
          attrs: dict[str, Any] | None = None) -> Tensor:
    """An elementwise op of one operand (Swift label ``with:``, Python ``with_``)."""
    tensor = operand(graph, value, f"{op}: with_")
    dtype = same_type(op, {"with_": tensor}, floats_only)
    return elementwise(graph, op, name, {"with_": tensor}, function, dtype, attrs)


def _binary(graph: GraphBuilder, op: str, name: str | None, primary: Operand,
            secondary: Operand, function: Callable[[Any, Any], Any]) -> Tensor:
    tensors = operands(graph, op, {"primaryTensor": primary, "secondaryTensor": secondary})
    return elementwise(graph, op, name, tensors, function, same_type(op, tensors))


def locally_constant(graph: GraphBuilder, inputs: dict[str, Tensor],
                     function: Callable[[RunArrays], Any], shape: Shape,
                     dtype: DataType) -> Tensor:
    """An internal op whose value does not move under small changes of its inputs (a 0/1
    mask of where a gradient passes, a count read from a shape): its gradient is zero."""
    numpy_dtype = dtype.numpy
    return record(graph, "locallyConstant", None, inputs,
                  lambda arrays: [fresh(function(arrays), numpy_dtype)], [(shape, dtype)])[0]


def _divide(a: NDArray[Any], b: NDArray[Any]) -> Any:
    if a.dtype.kind == "f":
        return np.true_divide(a, b)
    if not np.all(b):
        raise ValueError("division: secondaryTensor: integer division by zero")
    quotient = np.floor_divide(a, b)
    # C truncates toward zero: the floor plus one where the quotient is negative and inexact.
    quotient += (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
    return quotient


def _clamp_mask(label: str, arrays: RunArrays) -> Any:
    """Where clamp's result y = min(max(t, lo), hi) follows ``label`` (t, lo or hi); a tie
    goes to t, so t's gradient passes where lo <= t <= hi."""
    t, lo, hi = arrays["tensor"], arrays["min"], arrays["max"]
    kept = np.maximum(t, lo) <= hi
    if label == "max":
        return ~kept
    return ((t >= lo) if label == "tensor" else (t < lo)) & kept


def _swap_last(graph: GraphBuilder, tensor: Tensor) -> Tensor:
    """``tensor``'s matrices transposed (its last two axes swapped): a view."""
    return ReshapingOps.transposeTensor(graph, tensor, dimension=-2, withDimension=-1)


def _matrix(x: NDArray[Any], other: NDArray[Any]) -> NDArray[Any]:
    """A matrix as _core.matmul reads it: C-contiguous, or a transposed view of such when it
    is not much smaller than the other operand. A small transposed operand is copied: the
    BLAS runs a tall product against a transposed shallow one far slower (dlogits [2400, 36]
    · Wᵀ [36, 256]: 4.7 ms as given, 0.17 ms with Wᵀ copied; 2 threads, this 2-core machine),
    while copying a large one costs more than it saves (hᵀ [256, 2400]: 1.2 ms)."""
    if x.flags.c_contiguous or (x.flags.f_contiguous and 4 * x.size > other.size):
        return x
    return np.ascontiguousarray(x)


def _float_matmul(x: NDArray[Any], y: NDArray[Any]) -> NDArray[Any]:
    """numpy.matmul's result through rnngraph's gemm (rnngraph/matmul.hpp: its own threads
    and BLAS, not NumPy's pool), one matrix of the broadcast batch at a time."""
    if x.shape[-1] != y.shape[-2]:
        raise ValueError("inner sizes differ")
    if x.ndim == y.ndim == 2:  # the core's array (on the kept memory) as it is
        return _core.matmul(_matrix(x, y), _matrix(y, x))
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    out = np.empty((*batch, x.shape[-2], y.shape[-1]), x.dtype)
    xs = np.broadcast_to(x, (*batch, *x.shape[-2:]))
    ys = np.broadcast_to(y, (*batch, *y.shape[-2:]))
    for index in np.ndindex(batch):
        a, b = xs[index], ys[index]
        out[index] = _core.matmul(_matrix(a, b), _matrix(b, a))
    return out


def _check_inner(a: Tensor, b: Tensor) -> None:
    k, k2 = a.shape[-1], b.shape[-2 if len(b.shape) > 1 else 0]
    if k is not None and k2 is not None and k != k2:
        wanted = f"[..., {k}, N] or [{k}]"
        raise ValueError(f"matrixMultiplication: secondary: expected {wanted} to match "
                         f"primary {shape_text(a.shape)}, got {shape_text(b.shape)}")


def _matmul_shape(a: Tensor, b: Tensor) -> Shape:
    batch = broadcast_shapes("matrixMultiplication", {"primary batch": a.shape[:-2],
                                                      "secondary batch": b.shape[:-2]})
    return batch + (a.shape[-2], b.shape[-1])


class ArithmeticOps:
    def addition(self: GraphBuilder, primaryTensor: Operand, secondaryTensor: Operand,
                 name: str | None = None) -> Tensor:
        """``primaryTensor + secondaryTensor``. Both operands: Tensors (or a number or array)
        of one dataType whose shapes broadcast; returns the broadcast shape."""
        return _binary(self, "addition", name, primaryTensor, secondaryTensor, np.add)

    def subtraction(self: GraphBuilder, primaryTensor: Operand, secondaryTensor: Operand,
                    name: str | None = None) -> Tensor:
        """``primaryTensor - secondaryTensor``, shapes broadcast; returns the broadcast shape."""
        return _binary(self, "subtraction", name, primaryTensor, secondaryTensor, np.subtract)

    def multiplication(self: GraphBuilder, primaryTensor: Operand, secondaryTensor: Operand,
                       name: str | None = None) -> Tensor:
        """``primaryTensor * secondaryTensor`` elementwise, shapes broadcast; returns the
        broadcast shape."""
        return _binary(self, "multiplication", name, primaryTensor, secondaryTensor,
                       np.multiply)

    def division(self: GraphBuilder, primaryTensor: Operand, secondaryTensor: Operand,
                 name: str | None = None) -> Tensor:
        """``primaryTensor / secondaryTensor``, shapes broadcast; returns the broadcast shape.
        Integers truncate toward zero as in C; an integer zero divisor raises at run time."""
        return _binary(self, "division", name, primaryTensor, secondaryTensor, _divide)

    def matrixMultiplication(self: GraphBuilder, primary: Operand, secondary: Operand,
                             name: str | None = None) -> Tensor:
        """Batched matrix product, like ``numpy.matmul``: ``primary [..., M, K]`` times
        ``secondary [..., K, N]`` gives ``[..., M, N]``, the batch dims ``...`` broadcast.

        As in ``numpy.matmul``, a rank-1 ``primary [K]`` is read as ``[1, K]`` and a rank-1
        ``secondary [K]`` as ``[K, 1]``, and that dimension is dropped from the result:
        ``[K] x [..., K, N] -> [..., N]``, ``[..., M, K] x [K] -> [..., M]``, ``[K] x [K] -> []``.
        (Built as expandDims, the product and squeeze, so the gradients are theirs.)"""
        op = "matrixMultiplication"
        tensors = operands(self, op, {"primary": primary, "secondary": secondary})
        dtype = same_type(op, tensors)
        a, b = tensors["primary"], tensors["secondary"]
        for label, t in tensors.items():
            if len(t.shape) == 0:
                raise ValueError(f"{op}: {label}: expected rank >= 1 ([..., M, K] or [K] and "
                                 f"[..., K, N] or [K]), got a scalar")
        _check_inner(a, b)
        vector_axes = [-2] if len(a.shape) == 1 else []
        vector_axes += [-1] if len(b.shape) == 1 else []
        if vector_axes:  # numpy.matmul's rank-1 rule around a rank-2 product
            if name is not None and not isinstance(name, str):  # before any op is added
                raise TypeError(f"{op}: name: expected a str or None, got {name!r}")
            g = cast("Graph", self)
            a = a if len(a.shape) > 1 else g.expandDims(a, axis=0)
            b = b if len(b.shape) > 1 else g.expandDims(b, axis=-1)
            return g.squeeze(g.matrixMultiplication(a, b), axes=vector_axes, name=name)
        shape = _matmul_shape(a, b)

        def compute(arrays: RunArrays) -> list[NDArray[Any]]:
            x, y = arrays["primary"], arrays["secondary"]
            try:
                product = _float_matmul(x, y) if dtype.is_float else np.matmul(x, y)
            except ValueError:
                raise ValueError(f"{op}: shapes do not match at run time: primary "
                                 f"{list(x.shape)}, secondary {list(y.shape)}") from None
            return [fresh(product, dtype.numpy)]

        return record(self, op, name, tensors, compute, [(shape, dtype)])[0]

    def square(self: GraphBuilder, with_: Operand, name: str | None = None) -> Tensor:
        """``with_²`` elementwise; same shape and dataType (ints too)."""
        return unary(self, "square", name, with_, np.square, floats_only=False)

    def squareRoot(self: GraphBuilder, with_: Operand, name: str | None = None) -> Tensor:
        """``√with_`` elementwise (nan below 0); same shape; float32 or float64."""
        return unary(self, "squareRoot", name, with_, np.sqrt, floats_only=True)

    def exponent(self: GraphBuilder, with_: Operand, name: str | None = None) -> Tensor:
        """``e^with_`` elementwise; same shape; float32 or float64."""
        return unary(self, "exponent", name, with_, np.exp, floats_only=True)

    def logarithm(self: GraphBuilder, with_: Operand, name: str | None = None) -> Tensor:
        """Natural logarithm elementwise (-inf at 0, nan below); same shape; floats only."""
        return unary(self, "logarithm", name, with_, np.log, floats_only=True)

    def negative(self: GraphBuilder, with_: Operand, name: str | None = None) -> Tensor:
        """``-with_`` elementwise; same shape and dataType (ints too)."""
        return unary(self, "negative", name, with_, np.negative, floats_only=False)

    def clamp(self: GraphBuilder, tensor: Operand, *, min: Operand, max: Operand,
              name: str | None = None) -> Tensor:
        """``min(max(tensor, min), max)`` elementwise: ``tensor``, ``min`` and ``max`` of one
        dataType (or numbers), shapes broadcast; returns the broadcast shape."""
        tensors = operands(self, "clamp", {"tensor": tensor, "min": min, "max": max})
        return elementwise(self, "clamp", name, tensors,
                           lambda t, lo, hi: np.minimum(np.maximum(t, lo), hi),
                           same_type("clamp", tensors))

    def select(self: GraphBuilder, predicate: Operand, *, trueTensor: Operand,
               falseTensor: Operand, name: str | None = None) -> Tensor:
        """``trueTensor`` where ``predicate`` is nonzero, else ``falseTensor``. The predicate
        may have any dataType; the two values share one. Shapes broadcast; returns the
        broadcast shape, the values' dataType."""
        values = operands(self, "select", {"trueTensor": trueTensor, "falseTensor": falseTensor})
        dtype = same_type("select", values)
        tensors = {"predicate": operand(self, predicate, "select: predicate"), **values}
        return elementwise(self, "select", name, tensors,
                           lambda p, t, f: np.where(p != 0, t, f), dtype)


# --- gradient rules ----------------------------------------------------------------------

def elementwise_rule(**parts: Part) -> Rule:
    """A rule from one expression per input label: each gradient is reduced to its input's
    shape (``unbroadcast``), and only the wanted ones are built."""
    def rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
             wanted: set[str]) -> dict[str, Tensor]:
        gradient = present(grads[0])  # one output: the walk asks only when it has a gradient
        inputs = {label: t for label, t in op.inputs.items() if t is not None}
        builder = cast("Graph", graph)
        return {label: unbroadcast(graph, part(builder, gradient, inputs, op.outputs[0]),
                                   inputs[label])
                for label, part in parts.items() if label in wanted}
    return rule


def _clamp_part(label: str) -> Part:
    def part(g: Graph, grad: Tensor, x: dict[str, Tensor], y: Tensor) -> Tensor:
        mask = locally_constant(g, x, lambda a: _clamp_mask(label, a), y.shape, y.dataType)
        return g.multiplication(grad, mask)
    return part


GRADIENT_RULES: dict[str, Rule] = {
    "locallyConstant": lambda graph, op, grads, wanted: {},
    "addition": elementwise_rule(primaryTensor=lambda g, d, x, y: d,
                                 secondaryTensor=lambda g, d, x, y: d),
    "subtraction": elementwise_rule(primaryTensor=lambda g, d, x, y: d,
                                    secondaryTensor=lambda g, d, x, y: g.negative(d)),
    "multiplication": elementwise_rule(
        primaryTensor=lambda g, d, x, y: g.multiplication(d, x["secondaryTensor"]),
        secondaryTensor=lambda g, d, x, y: g.multiplication(d, x["primaryTensor"])),
    # d(a/b) = d/b, -d·(a/b)/b
    "division": elementwise_rule(
        primaryTensor=lambda g, d, x, y: g.division(d, x["secondaryTensor"]),
        secondaryTensor=lambda g, d, x, y: g.negative(
            g.division(g.multiplication(d, y), x["secondaryTensor"]))),
    # d(A·B) = d·Bᵀ, Aᵀ·d, summed over the batch dims that broadcasting stretched. The
    # transposes are views, which matmul reads through the BLAS as they are (a copy of the
    # [T·N, H] operand cost 2 ms of a 55 ms training step at row-7 size:
    # benchmarks/bench_training_step.py).
    "matrixMultiplication": elementwise_rule(
        primary=lambda g, d, x, y: g.matrixMultiplication(d, _swap_last(g, x["secondary"])),
        secondary=lambda g, d, x, y: g.matrixMultiplication(_swap_last(g, x["primary"]), d)),
    "square": elementwise_rule(
        with_=lambda g, d, x, y: g.multiplication(d, g.multiplication(x["with_"], 2.0))),
    # d√x = d / (2√x)
    "squareRoot": elementwise_rule(
        with_=lambda g, d, x, y: g.division(g.multiplication(d, 0.5), y)),
    "exponent": elementwise_rule(with_=lambda g, d, x, y: g.multiplication(d, y)),
    "logarithm": elementwise_rule(with_=lambda g, d, x, y: g.division(d, x["with_"])),
    "negative": elementwise_rule(with_=lambda g, d, x, y: g.negative(d)),
    "clamp": elementwise_rule(tensor=_clamp_part("tensor"), min=_clamp_part("min"),
                              max=_clamp_part("max")),
    "select": elementwise_rule(
        trueTensor=lambda g, d, x, y: g.select(x["predicate"], trueTensor=d, falseTensor=0.0),
        falseTensor=lambda g, d, x, y: g.select(x["predicate"], trueTensor=0.0, falseTensor=d)),
}
