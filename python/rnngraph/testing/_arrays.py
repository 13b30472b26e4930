"""assert_allclose and assert_outputs_close: arrays and a Graph's outputs against expected ones."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.graph import Graph
from rnngraph.shapes import shape_text
from rnngraph.tensor import Tensor
from rnngraph.testing._common import _check_graph, _positive, _table, _times

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

# Default tolerances of assert_allclose / assert_outputs_close, by the less precise of the
# two arrays' dtypes: (rtol, atol). Integers compare exactly.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-5, 1e-6),
    "float64": (1e-10, 1e-12),
}


def _tolerances(actual: NDArray[Any], desired: NDArray[Any], rtol: float | None,
                atol: float | None, function: str) -> tuple[float, float]:
    """The tolerances given, or the defaults for the less precise of the two dtypes."""
    names = {actual.dtype.name, desired.dtype.name}
    default = (DEFAULT_TOLERANCES["float32"] if "float32" in names or "float16" in names
               else DEFAULT_TOLERANCES["float64"] if names & {"float64", "longdouble",
                                                              "float128"}
               else (0.0, 0.0))
    return (_positive(function, "rtol", rtol, zero=True, none=default[0]),
            _positive(function, "atol", atol, zero=True, none=default[1]))


def _real(value: object, function: str, label: str) -> NDArray[Any]:
    if isinstance(value, Tensor):
        raise TypeError(f"{function}: {label}: expected an array, got a symbolic Tensor "
                        "(run the graph first, or use assert_outputs_close)")
    try:
        array = np.asarray(value)
    except ValueError as error:
        raise ValueError(f"{function}: {label}: not a rectangular array ({error})") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{function}: {label}: expected real numbers, got dtype {array.dtype}")
    return array


@dataclass
class _Mismatch:
    """How ``actual`` differs from ``desired``; ``None`` from ``_compare`` when it does not.
    Between integer (or bool) arrays the values and their difference are exact ints."""

    count: int
    size: int
    index: tuple[int, ...]
    actual: float
    desired: float
    difference: float
    error: float  # the worst |actual − desired| / (atol + rtol·|desired|)
    shapes: str = ""


def _compare(actual: NDArray[Any], desired: NDArray[Any], rtol: float, atol: float,
             equal_nan: bool) -> _Mismatch | None:
    if actual.shape != desired.shape:
        return _Mismatch(0, 0, (), 0.0, 0.0, 0.0, math.inf,
                         f"shape {shape_text(actual.shape)}, desired {shape_text(desired.shape)}")
    a = actual.astype(np.float64)
    d = desired.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        difference = np.abs(a - d)
        scale = atol + rtol * np.abs(d)  # how far each element may be off
        # Equal in their own dtypes: exact for integers too (float64 is not, above 2**53);
        # equal infinities and (with equal_nan) NaNs match.
        same = np.asarray(actual == desired)
        if equal_nan:
            same |= np.isnan(a) & np.isnan(d)
        # A desired infinity matches only itself (above): its scale is infinite, and inf <= inf.
        within = (difference <= scale) & np.isfinite(d)
        bad = ~same if rtol == 0 and atol == 0 else ~same & ~within
        if not bad.any():
            return None
        error = np.where(bad, np.where(scale > 0, difference / np.where(scale > 0, scale, 1),
                                       np.inf), 0.0)
        error = np.where(bad & np.isnan(error), np.inf, error)
    flat = int(np.argmax(error))
    index = tuple(int(i) for i in np.unravel_index(flat, a.shape))
    if actual.dtype.kind in "biu" and desired.dtype.kind in "biu":
        pair = (int(actual[index]), int(desired[index]))
        values: tuple[float, float, float] = (*pair, abs(pair[0] - pair[1]))  # (ints)
    else:
        values = (float(a[index]), float(d[index]), float(difference[index]))
    return _Mismatch(int(bad.sum()), int(a.size), index, *values, float(error[index]))


def _number(value: float, spec: str) -> str:
    """A value of a _Mismatch for a message: an int exactly, a float by ``spec``."""
    return str(value) if isinstance(value, int) else format(value, spec)


def assert_allclose(actual: ArrayLike, desired: ArrayLike, *, rtol: float | None = None,
                    atol: float | None = None, where: str = "array",
                    equal_nan: bool = True) -> None:
    """Assert ``|actual − desired| ≤ atol + rtol·|desired|`` element by element (NumPy's
    ``assert_allclose`` rule), with a message that says which elements differ.

    Args:
        actual: an array (e.g. a value ``Graph.run`` returned), any shape ``S``.
        desired: the expected values, shape ``S`` exactly (no broadcasting).
        rtol, atol: the tolerance; ``None`` takes the default for the less precise of the
            two arrays' dtypes: float32 ``rtol=1e-5, atol=1e-6``; float64 ``rtol=1e-10,
            atol=1e-12``; integers and booleans exact (``0, 0``).
        where: what is compared, for the message (a tensor's name).
        equal_nan: NaN in both at the same place counts as equal.

    Raises:
        AssertionError: a shape differs or an element is off, e.g.::

            h: 3 of 24 elements differ beyond atol + rtol·|desired| (rtol=1e-05,
            atol=1e-06); worst at (1, 0, 2): actual 0.5312, desired 0.5309, |difference|
            3.0e-04 = 27.4 × its tolerance

        TypeError, ValueError: an argument is not an array of real numbers or a tolerance
            is negative.

    Example::

        assert_allclose(out[h], h_expected, rtol=1e-6, atol=1e-7, where="h")
    """
    function = "assert_allclose"
    actual_array = _real(actual, function, "actual")
    desired_array = _real(desired, function, "desired")
    r, a = _tolerances(actual_array, desired_array, rtol, atol, function)
    mismatch = _compare(actual_array, desired_array, r, a, equal_nan)
    if mismatch is not None:
        raise AssertionError(f"{where}: {_describe(mismatch, r, a)}")


def _describe(m: _Mismatch, rtol: float, atol: float) -> str:
    if m.shapes:
        return f"{m.shapes}"
    return (f"{m.count} of {m.size} elements differ beyond atol + rtol·|desired| "
            f"(rtol={rtol:.1e}, atol={atol:.1e}); worst at {m.index}: actual "
            f"{_number(m.actual, '.7g')}, desired {_number(m.desired, '.7g')}, |difference| "
            f"{_number(m.difference, '.2e')} = {_times(m.error)} × its tolerance")


def assert_outputs_close(graph: Graph, feeds: Mapping[Tensor, ArrayLike] | None,
                         expected: Mapping[Tensor, ArrayLike], *, rtol: float | None = None,
                         atol: float | None = None,
                         equal_nan: bool = True) -> dict[Tensor, NDArray[Any]]:
    """Run ``graph`` for the tensors of ``expected`` and compare each output with its
    expected array like ``assert_allclose``; return the outputs ``{tensor: array}``.

    Every tensor is compared before anything is raised: the ``AssertionError`` lists each
    tensor that differs (name, shape, dataType, how many elements, the worst one).

    Args:
        graph: the Graph.
        feeds: ``{placeholder: array}`` as for ``graph.run`` (None: no feeds).
        expected: ``{tensor: array shaped like the tensor's output}``.
        rtol, atol: as in ``assert_allclose`` (None: the default for the less precise of
            each output's and its expected array's dtypes).
        equal_nan: as in ``assert_allclose``.

    Raises:
        AssertionError: an output differs (a table, one row per tensor that differs).
        TypeError, ValueError: a bad argument (and ``graph.run``'s own errors).

    Example::

        out = assert_outputs_close(g, {x: x_np}, {h: h_ref, c: c_ref}, rtol=1e-5, atol=1e-6)
    """
    function = "assert_outputs_close"
    _check_graph(function, graph)
    if not isinstance(expected, Mapping) or not expected:
        raise (TypeError if not isinstance(expected, Mapping) else ValueError)(
            f"{function}: expected: expected a non-empty dict {{Tensor: array}}, got "
            f"{expected!r:.60}")
    desired: dict[Tensor, NDArray[Any]] = {}
    for tensor, value in expected.items():
        graph._own(tensor, f"{function}: expected")
        desired[tensor] = _real(value, function, f"expected[{tensor.name!r}]")
    outputs = graph.run(feeds=dict(feeds) if feeds is not None else {},
                        targetTensors=list(desired))
    rows = [["tensor", "shape", "dataType", "rtol", "atol", "differ", "worst at", "actual",
             "desired", "× tolerance"]]
    for tensor, want in desired.items():
        r, a = _tolerances(outputs[tensor], want, rtol, atol, function)
        m = _compare(outputs[tensor], want, r, a, equal_nan)
        if m is None:
            continue
        if m.shapes:
            rows.append([tensor.name, shape_text(outputs[tensor].shape), tensor.dataType.value,
                         f"{r:.1e}", f"{a:.1e}", m.shapes, "", "", "", ""])
        else:
            rows.append([tensor.name, shape_text(outputs[tensor].shape), tensor.dataType.value,
                         f"{r:.1e}", f"{a:.1e}", f"{m.count} of {m.size}", str(m.index),
                         _number(m.actual, ".7g"), _number(m.desired, ".7g"),
                         _times(m.error)])
    if len(rows) > 1:
        raise AssertionError(
            f"{function}: {len(rows) - 1} of {len(desired)} outputs differ beyond "
            "atol + rtol·|desired|\n" + _table(rows))
    return outputs


