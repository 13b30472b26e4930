"""MPSGraph's stochasticGradientDescent, applyStochasticGradientDescent and adam.

Each optimizer is one recorded op that computes all its outputs in one NumPy pass (a training
step stays cheap). Every tensor argument takes the values' dataType (float32 or float64): a
Python number becomes a scalar constant of it. The state tensors (momentum, velocity,
maximumVelocity) and the gradient are shaped like the values; the hyper-parameters are
scalars or broadcast to the values' shape without growing it.

The optimizers' outputs are not differentiable: their rules in ``GRADIENT_RULES`` refuse
(ValueError) a loss that depends on them.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph._native import core as _core
from rnngraph.dtypes import dense
from rnngraph.ops.operands import FRESH, operand, record, same_type
from rnngraph.ops.state import StateOps, as_variable
from rnngraph.shapes import broadcastable, compatible, shape_text

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from numpy.typing import NDArray

    from rnngraph._typing import GraphBuilder, Rule, RunArrays, Shape
    from rnngraph.graph import Operation
    from rnngraph.ops.arithmetic import Operand
    from rnngraph.tensor import Tensor


_STATE = ("momentum", "velocity", "maximumVelocity", "gradient")  # shaped like the values


def _shape_error(op: str, label: str, shape: Shape, target: Shape, subject: str) -> str | None:
    """Why ``label``'s ``shape`` does not fit ``target``, the shape of the ``subject``
    (``values`` or ``variable``); None when it fits or, with unknown dimensions, may fit."""
    if label in _STATE:
        if compatible(shape, target):
            return None
        return (f"{op}: {label}: expected the shape of {subject} {shape_text(target)}, got "
                f"{shape_text(shape)}")
    if broadcastable(shape, target):
        return None
    return (f"{op}: {label}: expected a scalar or a shape that broadcasts to the shape of "
            f"{subject} {shape_text(target)}, got {shape_text(shape)}")


def _arguments(graph: GraphBuilder, op: str, subject: str, values: object,
               others: Mapping[str, object], optional: tuple[str, ...] = ()) -> dict[str, Tensor]:
    """The op's tensors by label (the values under ``values``, whatever ``subject`` labels
    them in errors): converted (a number takes the values' dataType), checked for one float
    dataType, the state shaped like the values and the hyper-parameters broadcasting into
    them. Only the labels in ``optional`` may be None (absent: left out)."""
    tensors = {subject: operand(graph, values, f"{op}: {subject}")}
    like = same_type(op, tensors, floats_only=True)
    tensors.update((label, operand(graph, v, f"{op}: {label}", like))
                   for label, v in others.items() if v is not None or label not in optional)
    same_type(op, tensors, floats_only=True)
    target = tensors.pop(subject)
    for label, t in tensors.items():
        error = _shape_error(op, label, t.shape, target.shape, subject)
        if error:
            raise ValueError(error)
    return {"values": target, **tensors}


def _values_reader(op: str, subject: str,
                   tensors: dict[str, Tensor]) -> Callable[[RunArrays], NDArray[Any]]:
    """The compute's access to the values' array: with every shape known at build time,
    ``_arguments`` has checked them all; else each run checks the shapes it now knows (the
    run-time twin of ``_arguments``' checks)."""
    if all(None not in t.shape for t in tensors.values()):
        return lambda arrays: arrays["values"]

    def checked(arrays: RunArrays) -> NDArray[Any]:
        values: NDArray[Any] = arrays["values"]
        for label, array in arrays.items():
            error = None if label == "values" else _shape_error(op, label, array.shape,
                                                                 values.shape, subject)
            if error:
                raise ValueError(error)
        return values

    return checked


def _sgd(graph: GraphBuilder, op: str, subject: str, learningRate: Operand,
         values: Operand, gradient: Operand, name: str | None) -> Tensor:
    """The ``stochasticGradientDescent`` op; errors name ``op`` (the public method) and
    ``subject`` (its label for the values)."""
    tensors = _arguments(graph, op, subject, values,
                         {"learningRate": learningRate, "gradient": gradient})

    values_of = _values_reader(op, subject, tensors)

    def compute(a: RunArrays) -> list[NDArray[Any]]:
        with np.errstate(all="ignore"):  # IEEE inf and nan, silently, as every op gives them
            return [values_of(a) - _scalar(a["learningRate"]) * a["gradient"]]

    order = {label: tensors[label] for label in ("learningRate", "values", "gradient")}
    return record(graph, "stochasticGradientDescent", name, order, compute,
                  [(tensors["values"].shape, tensors["values"].dataType)], FRESH)[0]


def _scalar(x: Any) -> Any:
    """A rank-0 array as a NumPy scalar of its dtype: NumPy multiplies an array by a scalar
    about 3× faster than by a rank-0 array (0.16 against 0.48 ms for 1024×256 floats)."""
    return x[()] if isinstance(x, np.ndarray) and x.ndim == 0 else x


def _adam_compute(values_of: Callable[[RunArrays], NDArray[Any]],
                  a: RunArrays) -> list[NDArray[Any]]:
    """One Adam step over arrays of one dataType (Python ints below keep it). With every
    hyper-parameter one number (the usual case) it is the core's fused pass on rnngraph's
    threads (rnngraph/optimizers.hpp); a hyper-parameter given per element takes NumPy's
    broadcasting through the same formulas."""
    values = values_of(a)
    g, momentum, velocity = a["gradient"], a["momentum"], a["velocity"]
    kept = a.get("maximumVelocity")
    h = {label: _scalar(x) for label, x in a.items()}  # hyper-parameters as numbers
    beta1, beta2, epsilon = h["beta1"], h["beta2"], h["epsilon"]
    with np.errstate(all="ignore"):  # IEEE inf and nan, silently, as the fused pass gives them
        if h.get("currentLearningRate") is not None:
            lr = h["currentLearningRate"]
        else:
            # lr[t] = learningRate * sqrt(1 - beta2^t) / (1 - beta1^t)
            lr = h["learningRate"] * np.sqrt(1 - h["beta2Power"]) / (1 - h["beta1Power"])
        if any(np.ndim(x) != 0 for x in (lr, beta1, beta2, epsilon)):
            momentum = beta1 * momentum + g * (1 - beta1)
            velocity = beta2 * velocity + (g * g) * (1 - beta2)
            outputs = [momentum, velocity]
            denominator = velocity
            if kept is not None:  # AMSGrad: divide by the running maximum
                denominator = np.maximum(kept, velocity)
                outputs.append(denominator)
            return [values - (lr * momentum) / (np.sqrt(denominator) + epsilon), *outputs]
    return list(_core.adam_update(
        dense(values), dense(momentum), dense(velocity), None if kept is None else dense(kept),
        dense(g), float(lr), float(beta1), float(beta2), float(epsilon)))


class OptimizerOps:
    def stochasticGradientDescent(self: GraphBuilder, learningRate: Operand, *,
                                  values: Operand, gradient: Operand,
                                  name: str | None = None) -> Tensor:
        """Gradient descent: ``values - learningRate * gradient``.

        Args:
            learningRate: a scalar (Tensor or number), or any shape broadcasting to values'.
            values: the trainable parameters, any shape ``S`` (float32 or float64).
            gradient: d(loss)/d(values), ``S``.

        Returns:
            The updated values, ``S``, of the values' dataType.
        """
        return _sgd(self, "stochasticGradientDescent", "values", learningRate, values,
                    gradient, name)

    def applyStochasticGradientDescent(self: GraphBuilder, learningRate: Operand, *,
                                       variable: Tensor, gradient: Operand,
                                       name: str | None = None) -> Operation:
        """An Operation that sets ``variable`` to ``variable - learningRate * gradient``
        when a run names it in ``targetOperations`` (an ``assign``; reads in that run see
        the value from before it).

        Args:
            learningRate: a scalar (Tensor or number), or any shape broadcasting to the
                variable's.
            variable: a variable Tensor (``Graph.variable``), any shape ``S``.
            gradient: d(loss)/d(variable), ``S``.

        Returns:
            The assign Operation.
        """
        op = "applyStochasticGradientDescent"
        if name is not None and not isinstance(name, str):
            raise TypeError(f"{op}: name: expected a str or None, got {name!r}")
        target = as_variable(self, variable, f"{op}: variable")
        update = _sgd(self, op, "variable", learningRate, target, gradient,
                      None if name is None else f"{name}/update")
        return StateOps.assign(self, target, tensor=update, name=name)

    def adam(self: GraphBuilder, learningRate: Operand | None = None, *,
             beta1: Operand, beta2: Operand, epsilon: Operand,
             beta1Power: Operand | None = None, beta2Power: Operand | None = None,
             values: Operand, momentum: Operand, velocity: Operand,
             maximumVelocity: Operand | None = None, gradient: Operand,
             currentLearningRate: Operand | None = None,
             name: str | None = None) -> list[Tensor]:
        """One Adam step (AMSGrad with ``maximumVelocity``), as Apple's header states it::

            lr[t] = learningRate * sqrt(1 - beta2^t) / (1 - beta1^t)
            m[t] = beta1 * m[t-1] + (1 - beta1) * g
            v[t] = beta2 * v[t-1] + (1 - beta2) * (g ^ 2)
            maxVel[t] = max(maxVel[t-1], v[t])
            variable = variable - lr[t] * m[t] / (sqrt(maxVel) + epsilon)

        Without ``maximumVelocity`` the last line divides by ``sqrt(v[t]) + epsilon``.
        Give either ``learningRate`` with ``beta1Power`` = beta1^t and ``beta2Power`` =
        beta2^t (t = 1 at the first step; the caller keeps them, e.g. in variables), or
        ``currentLearningRate`` = lr[t] without the powers (Swift's
        ``adam(currentLearningRate:...)``).

        Args:
            learningRate: a scalar (Tensor or number) or a shape broadcasting to ``S``; so are
                ``currentLearningRate``, ``beta1``, ``beta2``, ``epsilon``, ``beta1Power``
                and ``beta2Power``.
            values: the trainable parameters, any shape ``S`` (float32 or float64).
            momentum, velocity: m[t-1], v[t-1], ``S``.
            maximumVelocity: maxVel[t-1], ``S``, or None (plain Adam).
            gradient: g = d(loss)/d(values), ``S``.

        Returns:
            ``[values, momentum, velocity]`` after the step, plus ``maximumVelocity`` when
            one is given; each ``S``, of the values' dataType.
        """
        if learningRate is not None and currentLearningRate is not None:
            raise TypeError("adam: currentLearningRate: give learningRate= (with beta1Power=, "
                            "beta2Power=) or currentLearningRate=, not both")
        if learningRate is None and currentLearningRate is None:
            raise TypeError("adam: learningRate: expected learningRate= (with beta1Power=, "
                            "beta2Power=) or currentLearningRate=")
        powers = {"beta1Power": beta1Power, "beta2Power": beta2Power}
        for label, power in powers.items():
            if learningRate is not None and power is None:
                raise TypeError(f"adam: {label}: required with learningRate= (beta1^t, "
                                "beta2^t)")
            if currentLearningRate is not None and power is not None:
                raise TypeError(f"adam: {label}: not taken with currentLearningRate= (it "
                                "already holds the step's corrected rate)")
        tensors = _arguments(self, "adam", "values", values, {
            "learningRate": learningRate, "currentLearningRate": currentLearningRate,
            "beta1": beta1, "beta2": beta2, "epsilon": epsilon, **powers,
            "momentum": momentum, "velocity": velocity, "maximumVelocity": maximumVelocity,
            "gradient": gradient}, optional=(*powers, "learningRate", "currentLearningRate",
                                             "maximumVelocity"))
        order = ("learningRate", "currentLearningRate", "beta1", "beta2", "epsilon",
                 "beta1Power", "beta2Power", "values", "momentum", "velocity",
                 "maximumVelocity", "gradient")  # Swift's argument order
        inputs = {label: tensors[label] for label in order if label in tensors}
        like = (tensors["values"].shape, tensors["values"].dataType)
        count = 4 if maximumVelocity is not None else 3
        compute = functools.partial(_adam_compute, _values_reader("adam", "values", tensors))
        return record(self, "adam", name, inputs, compute, [like] * count, FRESH)


def _not_differentiable(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
                        wanted: set[str]) -> dict[str, Tensor]:
    raise ValueError(f"gradients: of: depends on {op.name!r} through its inputs, but there is "
                     f"no gradient rule for {op.kind} ops (an optimizer's outputs are not "
                     "differentiable)")


GRADIENT_RULES: dict[str, Rule] = {
    "stochasticGradientDescent": _not_differentiable,  # (applyStochasticGradientDescent's too)
    "adam": _not_differentiable,
}
