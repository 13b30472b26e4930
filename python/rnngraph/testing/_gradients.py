"""check_gradients: a Graph's gradients against central differences in float64."""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.dtypes import DataType
from rnngraph.graph import Graph, Operation
from rnngraph.ops.arguments import integer_argument
from rnngraph.shapes import shape_text
from rnngraph.tensor import Tensor
from rnngraph.testing._arguments import _FUNCTION, _check_float64, _with
from rnngraph.testing._common import _check_graph, _positive, _table

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray


# -- check_gradients ---------------------------------------------------------------------------

@dataclass
class _Result:
    """One check of one tensor: its worst error, where it was, and that check's values."""

    tensor: Tensor
    shape: tuple[int, ...]
    method: str  # "3 random directions", "24 elements"
    error: float
    where: str  # "direction 2", "element (1, 0, 3)"
    analytic: float
    numeric: float


class _Evaluator:
    """``sum(of)`` in float64 at the base point, or with one tensor of ``with_`` replaced.

    Placeholders are replaced through the feeds; variables through an assign fed by a
    placeholder (made once per graph and variable, kept in ``_SETTERS``). A variable is put
    back to its base value when the evaluator moves on to another tensor and when it is
    closed."""

    def __init__(self, graph: Graph, of: Tensor, feeds: dict[Tensor, Any],
                 variables: dict[Tensor, NDArray[np.float64]]) -> None:
        self.graph, self.of, self.feeds, self.base = graph, of, feeds, variables
        self.dirty: Tensor | None = None  # the variable that holds a perturbed value
        self.setters = {v: _setter(graph, v) for v in variables}

    def loss(self, tensor: Tensor, value: NDArray[np.float64]) -> float:
        if tensor in self.base:
            if self.dirty is not None and self.dirty is not tensor:
                self._set(self.dirty, self.base[self.dirty])
            self._set(tensor, value)
            self.dirty = tensor
            feeds = self.feeds
        else:
            feeds = {**self.feeds, tensor: value}
        out = self.graph.run(feeds=feeds, targetTensors=[self.of])[self.of]
        return float(np.sum(out, dtype=np.float64))

    def _set(self, variable: Tensor, value: NDArray[np.float64]) -> None:
        placeholder, assign = self.setters[variable]
        self.graph.run(feeds={placeholder: value}, targetOperations=[assign])

    def close(self) -> None:
        """Every variable of ``with_`` back to its value from before the check."""
        for variable, value in self.base.items():
            self._set(variable, value)
        self.dirty = None


# graph -> {variable: (placeholder, assign op)}: the ops that set a variable during a check,
# made once per graph and variable (a second check of the same graph adds no ops).
_SETTERS: weakref.WeakKeyDictionary[Graph, dict[Tensor, tuple[Tensor, Operation]]] = (
    weakref.WeakKeyDictionary())


def _setter(graph: Graph, variable: Tensor) -> tuple[Tensor, Operation]:
    made = _SETTERS.setdefault(graph, {})
    if variable not in made:
        placeholder = graph.placeholder(variable.shape, DataType.float64,
                                        name=f"{variable.name}/check_gradients_value")
        made[variable] = (placeholder, graph.assign(variable, placeholder,
                                                    name=f"{variable.name}/check_gradients_set"))
    return made[variable]


def check_gradients(graph: Graph, of: Tensor, with_: Tensor | Iterable[Tensor],
                    feeds: Mapping[Tensor, ArrayLike], *,
                    analytic: Mapping[Tensor, Tensor] | None = None,
                    eps: float = 1e-6, rtol: float = 1e-5, atol: float = 1e-7,
                    directions: int = 3, per_element_limit: int = 100,
                    seed: int = 0) -> dict[Tensor, float]:
    """Check the gradients of ``sum(of)`` with respect to each tensor of ``with_`` against
    central differences in float64; return ``{tensor: worst error}``.

    The analytic gradients are ``graph.gradients(of=of, with_=with_)`` (which adds the
    backward ops to ``graph`` the first time, as a call of your own would), or, to check
    gradient ops you wired yourself (``LSTMGradients`` and the like), the tensors of
    ``analytic``. They are evaluated once, at ``feeds``; the numeric gradients come from
    runs of ``of`` with one tensor of ``with_`` perturbed at a time.

    Two checks per tensor ``x`` of ``with_`` (``a`` analytic, ``n`` numeric, ``L = sum(of)``):

    * ``directions`` random directions ``d`` (standard normal, scaled to unit norm; drawn
      from ``numpy.random.default_rng(seed)``): ``a = sum(grad_x ⊙ d)`` against
      ``n = (L(x + eps·d) − L(x − eps·d)) / (2·eps)``;
    * every element, when ``x`` has at most ``per_element_limit`` elements:
      ``a = grad_x[i]`` against ``n = (L(x + eps·e_i) − L(x − eps·e_i)) / (2·eps)``, where
      ``2·eps`` is the step actually taken, ``(x_i + eps) − (x_i − eps)`` as rounded.

    The error of one comparison is ``|a − n| / (|n| + atol/rtol)``; a comparison passes when
    its error is at most ``rtol``, which is exactly ``|a − n| ≤ atol + rtol·|n|`` (NumPy's
    ``isclose`` rule with the numeric value as the reference). So the error is a relative
    error for gradients well above ``atol/rtol`` (0.01 with the defaults) and an absolute
    error scaled by ``rtol/atol`` below it. A tensor's reported error is its worst over both
    checks. With float64 and ``eps = 1e-6`` the central difference itself is off by about
    ``eps²·|L'''|`` (truncation) plus ``1e-16·|L| / eps`` (rounding), i.e. 1e-10 to 1e-9
    for a loss of order 1 to 10: the defaults leave a margin of 100 while a wrong gradient
    is off by far more.

    Args:
        graph: the Graph that holds ``of`` and ``with_``.
        of: the tensor whose sum is differentiated (a scalar loss, usually); float64.
        with_: a tensor or a list of them; each a float64 placeholder (perturbed through
            its feed) or a float64 variable (perturbed through an assign: see Notes).
            Constants and computed tensors cannot be perturbed and are refused
            (``ValueError``): make the value a placeholder or a variable to check it.
        feeds: ``{placeholder: array}`` for every placeholder ``of`` needs, as for
            ``graph.run``; each placeholder of ``with_`` must be fed.
        analytic: ``{tensor of with_: its gradient tensor}``, one for each tensor of
            ``with_``, used instead of ``graph.gradients``; each gradient must be shaped
            like its tensor.
        eps: the step of the central differences, > 0 (absolute: in the units of the
            tensors).
        rtol, atol: the tolerance (above); ``rtol > 0``, ``atol >= 0``.
        directions: random directions per tensor, >= 0 (0: per element only, which then
            must cover every tensor).
        per_element_limit: tensors of at most this many elements are also checked element
            by element (2 runs of ``of`` per element, 4 for a variable).
        seed: seeds the random directions; the same seed gives the same check.

    Returns:
        ``{tensor: its worst error}`` for every tensor of ``with_``.

    Raises:
        AssertionError: a comparison exceeds the tolerance; the message is a table of every
            check (tensor, shape, method, worst error, tolerance, where the worst error was,
            the analytic and numeric values there).
        TypeError: ``of``, a tensor of ``with_`` or a tensor on a path between them is not
            float64 (central differences in float32 measure float32's rounding, not the
            gradient: build the graph in float64 to check it), or an argument has the wrong
            type.
        ValueError: a bad argument: a tensor of another graph, a constant or a computed
            tensor in ``with_``, an unfed placeholder, ``analytic`` without a gradient for
            each tensor, a gradient of the wrong shape, a bad ``eps``, ``rtol``, ``atol``,
            ``directions`` or ``per_element_limit``.

    Notes:
        Variables: the check adds, once per graph and variable, a float64 placeholder and an
        ``assign`` of the variable to it (named ``<variable>/check_gradients_value`` and
        ``<variable>/check_gradients_set``) and puts every variable of ``with_`` back to
        its value from before the check when it ends, also when it raises.
        The feeds are not modified (the placeholders of ``with_`` are perturbed in float64
        copies).

    Example::

        rng = np.random.default_rng(0)
        T, N, I, H = 4, 2, 3, 5
        g = rg.Graph()
        x = g.placeholder((T, N, I), rg.float64, name="x")
        R = g.variable(0.3 * rng.standard_normal((4 * H, H)), shape=(4 * H, H),
                       dataType=rg.float64, name="R")
        h, = g.LSTM(x, recurrentWeight=R, inputWeight=0.3 * rng.standard_normal((4 * H, I)))
        loss = g.reductionSum(g.square(h), axes=[0, 1, 2])
        errors = rnngraph.testing.check_gradients(g, loss, [x, R],
                                                  {x: rng.standard_normal((T, N, I))})
        # {x: 1.7e-09, R: 7.4e-09}; an AssertionError with a table if one were above rtol
    """
    _check_graph(_FUNCTION, graph)
    of = graph._own(of, f"{_FUNCTION}: of")
    wanted = _with(graph, with_)
    if not isinstance(feeds, Mapping):
        raise TypeError(f"{_FUNCTION}: feeds: expected a dict {{placeholder Tensor: array}}, "
                        f"got {type(feeds).__name__}")
    for tensor in feeds:
        graph._own(tensor, f"{_FUNCTION}: feeds")
    eps = _positive(_FUNCTION, "eps", eps)
    rtol = _positive(_FUNCTION, "rtol", rtol)
    atol = _positive(_FUNCTION, "atol", atol, zero=True)
    directions = integer_argument(_FUNCTION, "directions", directions, minimum=0)
    per_element_limit = integer_argument(_FUNCTION, "per_element_limit", per_element_limit,
                                         minimum=0)
    seed = integer_argument(_FUNCTION, "seed", seed, minimum=0)
    _check_float64(of, wanted)

    # the point of the check: a float64 copy of each tensor of with_ (its feed, or the
    # variable's value, all variables read in one run)
    variables = [t for t in wanted if t.op.kind == "variable"]
    values = graph.run(targetTensors=variables) if variables else {}
    points: dict[Tensor, NDArray[np.float64]] = {}
    for tensor in wanted:
        kind = tensor.op.kind
        if kind == "placeholder":
            if tensor not in feeds:
                raise ValueError(f"{_FUNCTION}: feeds: placeholder {tensor.name!r} of with_ "
                                 "needs a feed (its value is the point the gradient is "
                                 "checked at)")
            points[tensor] = np.array(feeds[tensor], dtype=np.float64, copy=True)
        elif kind == "variable":
            points[tensor] = np.array(values[tensor], dtype=np.float64, copy=True)
        elif kind == "constant":
            raise ValueError(f"{_FUNCTION}: with_: {tensor.name!r} is a constant, which cannot "
                             "be perturbed: make it a placeholder (and feed it) or a variable "
                             "to check its gradient")
        else:
            raise ValueError(f"{_FUNCTION}: with_: {tensor.name!r} is computed by a "
                             f"{kind} op; only placeholders and variables can be perturbed "
                             "(check the gradients of the inputs it is computed from)")
        size = points[tensor].size
        if directions == 0 and size > per_element_limit:
            raise ValueError(f"{_FUNCTION}: directions: 0 leaves {tensor.name!r} unchecked "
                             f"({size} elements, more than per_element_limit="
                             f"{per_element_limit})")
    base_values = {t: points[t] for t in variables}  # the variables' values to restore
    base_feeds: dict[Tensor, Any] = {**feeds, **{t: point for t, point in points.items()
                                                 if t not in base_values}}

    gradient_tensors = _analytic_tensors(graph, of, wanted, analytic)
    computed = graph.run(feeds=base_feeds, targetTensors=list(gradient_tensors.values()))
    gradients: dict[Tensor, NDArray[np.float64]] = {}
    for tensor, gradient_tensor in gradient_tensors.items():
        gradient = np.asarray(computed[gradient_tensor], dtype=np.float64)
        if gradient.shape != points[tensor].shape:
            raise ValueError(f"{_FUNCTION}: analytic: the gradient of {tensor.name!r} "
                             f"({gradient_tensor.name!r}) has shape "
                             f"{shape_text(gradient.shape)}, the tensor "
                             f"{shape_text(points[tensor].shape)}")
        gradients[tensor] = gradient

    rng = np.random.default_rng(seed)
    evaluator = _Evaluator(graph, of, base_feeds, base_values)
    results: list[_Result] = []
    try:
        for tensor in wanted:
            results += _check_tensor(evaluator, tensor, points[tensor], gradients[tensor], rng,
                                     eps, rtol, atol, directions, per_element_limit)
    finally:
        evaluator.close()

    worst: dict[Tensor, float] = {}
    for result in results:
        previous = worst.get(result.tensor, 0.0)
        worst[result.tensor] = (result.error if math.isnan(result.error)
                                or result.error > previous else previous)
    for tensor in wanted:
        worst.setdefault(tensor, 0.0)  # an empty tensor: nothing to compare
    failed = [r for r in results if not r.error <= rtol]
    if failed:
        raise AssertionError(_report(of, results, failed, eps, rtol, atol))
    return worst


def _check_tensor(evaluator: _Evaluator, tensor: Tensor, point: NDArray[np.float64],
                  gradient: NDArray[np.float64], rng: np.random.Generator, eps: float,
                  rtol: float, atol: float, directions: int,
                  per_element_limit: int) -> list[_Result]:
    """The direction check and (small tensors) the element check of one tensor."""
    if point.size == 0:
        return []
    floor = atol / rtol
    shape = tuple(point.shape)
    results = []

    def central(step: NDArray[np.float64]) -> float:
        return (evaluator.loss(tensor, point + step)
                - evaluator.loss(tensor, point - step)) / (2 * eps)

    def central_at(index: tuple[int, ...]) -> float:
        # divided by the step actually taken: (x + eps) − (x − eps) rounded, not 2·eps
        plus, minus = point.copy(), point.copy()
        plus[index] += eps
        minus[index] -= eps
        return ((evaluator.loss(tensor, plus) - evaluator.loss(tensor, minus))
                / float(plus[index] - minus[index]))

    if directions:
        worst = _Result(tensor, shape, f"{directions} random direction"
                        + ("s" if directions > 1 else ""), -1.0, "", 0.0, 0.0)
        for k in range(directions):
            direction = rng.standard_normal(shape)
            direction /= np.linalg.norm(direction)
            a = float(np.sum(gradient * direction))
            n = central(eps * direction)
            worst = _worse(worst, a, n, floor, f"direction {k}")
        results.append(worst)
    if point.size <= per_element_limit:
        worst = _Result(tensor, shape, f"{point.size} element" + ("s" if point.size > 1 else ""),
                        -1.0, "", 0.0, 0.0)
        for index in np.ndindex(shape):
            n = central_at(index)
            worst = _worse(worst, float(gradient[index]), n, floor, f"element {index}")
        results.append(worst)
    return results


def _worse(worst: _Result, a: float, n: float, floor: float, where: str) -> _Result:
    """``worst``, or the comparison (a, n) where its error is larger (NaN is worst)."""
    error = abs(a - n) / (abs(n) + floor) if floor > 0 or n != 0 else (0.0 if a == n else math.inf)
    if math.isnan(error) or (not math.isnan(worst.error) and error > worst.error):
        return _Result(worst.tensor, worst.shape, worst.method, error, where, a, n)
    return worst


def _report(of: Tensor, results: list[_Result], failed: list[_Result], eps: float,
            rtol: float, atol: float) -> str:
    names = sorted({r.tensor.name for r in failed})
    header = (f"{_FUNCTION}: {len(failed)} of {len(results)} checks of the gradient of "
              f"sum({of.name}) exceed the tolerance ({', '.join(names)})\n"
              f"error = |analytic − numeric| / (|numeric| + atol/rtol), passes when ≤ rtol, "
              f"i.e. |analytic − numeric| ≤ atol + rtol·|numeric|; rtol={rtol:.1e}, "
              f"atol={atol:.1e}; numeric: float64 central differences, eps={eps:.1e}")
    rows = [["tensor", "shape", "method", "worst error", "tolerance", "result", "worst at",
             "analytic", "numeric"]]
    for r in results:
        rows.append([r.tensor.name, shape_text(r.shape), r.method, f"{r.error:.2e}",
                     f"{rtol:.1e}", "ok" if r.error <= rtol else "FAIL", r.where,
                     f"{r.analytic:.9e}", f"{r.numeric:.9e}"])
    return header + "\n" + _table(rows)


def _analytic_tensors(graph: Graph, of: Tensor, wanted: list[Tensor],
                      analytic: Mapping[Tensor, Tensor] | None) -> dict[Tensor, Tensor]:
    if analytic is None:
        found = graph.gradients(of=of, with_=wanted)
        return {t: found[t] for t in wanted}
    if not isinstance(analytic, Mapping):
        raise TypeError(f"{_FUNCTION}: analytic: expected a dict {{tensor of with_: gradient "
                        f"Tensor}} or None, got {type(analytic).__name__}")
    extra = [t for t in analytic if t not in wanted]
    if extra:
        raise ValueError(f"{_FUNCTION}: analytic: "
                         f"{', '.join(repr(getattr(t, 'name', t)) for t in extra)} "
                         "not in with_")
    missing = [t.name for t in wanted if t not in analytic]
    if missing:
        raise ValueError(f"{_FUNCTION}: analytic: no gradient for {', '.join(map(repr, missing))}"
                         " (give one for every tensor of with_)")
    chosen = {t: graph._own(analytic[t], f"{_FUNCTION}: analytic") for t in wanted}
    for tensor, gradient in chosen.items():
        if not gradient.dataType.is_float:
            raise TypeError(f"{_FUNCTION}: analytic: the gradient of {tensor.name!r} "
                            f"({gradient.name!r}) is {gradient.dataType.value}, not a float")
    return chosen
