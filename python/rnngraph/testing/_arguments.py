"""check_gradients' argument checks: the tensors to check, the feeds, the tolerances."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.dtypes import DataType
from rnngraph.graph import Graph
from rnngraph.tensor import Tensor
from rnngraph.testing import _common

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rnngraph.graph import Operation

_FUNCTION = "check_gradients"  # what the errors name


def _check_float64(of: Tensor, wanted: list[Tensor]) -> None:
    """``of``, ``with_`` and every float tensor on a path between them are float64."""
    for label, tensor in [("of", of)] + [("with_", t) for t in wanted]:
        if tensor.dataType is not DataType.float64:
            raise TypeError(f"{_FUNCTION}: {label}: {tensor.name!r} is "
                            f"{tensor.dataType.value}; the check needs float64 (build the "
                            "graph in float64 to check its gradients: central differences "
                            "in float32 measure float32's rounding)")
    on_path = [t for t in _between(of, set(wanted))
               if t.dataType.is_float and t.dataType is not DataType.float64]
    if on_path:
        names = ", ".join(f"{t.name!r} ({t.dataType.value})" for t in on_path[:5])
        more = f" and {len(on_path) - 5} more" if len(on_path) > 5 else ""
        raise TypeError(f"{_FUNCTION}: of: the path from with_ to {of.name!r} passes through "
                        f"{names}{more}; the check needs float64 all the way (build the "
                        "graph in float64)")


def _between(of: Tensor, wanted: set[Tensor]) -> list[Tensor]:
    """The tensors that ``of`` is computed from and that depend on a tensor of ``wanted``
    (``of`` included when it does), without recursion."""
    depends: dict[Operation, bool] = {}
    stack: list[tuple[Operation, bool]] = [(of.op, False)]
    while stack:
        op, expanded = stack.pop()
        if op in depends:
            continue
        inputs = [t for t in op.inputs.values() if t is not None]
        if expanded:
            depends[op] = any(t in wanted or depends[t.op] for t in inputs)
            continue
        stack.append((op, True))
        stack.extend((t.op, False) for t in inputs if t.op not in depends)
    found = []
    for op, reached in depends.items():
        if reached:
            found += [t for t in op.inputs.values()
                      if t is not None and (t in wanted or depends[t.op])]
    if of in wanted or depends[of.op]:
        found.append(of)
    return list(dict.fromkeys(found))


def _with(graph: Graph, with_: object) -> list[Tensor]:
    if isinstance(with_, Tensor):
        return [_own(graph, with_, "with_")]
    if isinstance(with_, (str, bytes, Mapping)) or not isinstance(with_, Iterable):
        raise TypeError(f"{_FUNCTION}: with_: expected a Tensor or a list of Tensors, got "
                        f"{type(with_).__name__}")
    wanted = [_own(graph, t, "with_") for t in with_]
    if not wanted:
        raise ValueError(f"{_FUNCTION}: with_: expected at least one tensor, got none")
    seen: set[Tensor] = set()
    for t in wanted:
        if t in seen:
            raise ValueError(f"{_FUNCTION}: with_: {t.name!r} is given twice")
        seen.add(t)
    return wanted


def _own(graph: Graph, tensor: object, label: str) -> Tensor:
    return _common._own(_FUNCTION, label, graph, tensor)


def _positive(value: object, label: str, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{_FUNCTION}: {label}: expected a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not zero):
        raise ValueError(f"{_FUNCTION}: {label}: expected a finite number "
                         f"{'>= 0' if zero else '> 0'}, got {value!r}")
    return number


def _count(value: object, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{_FUNCTION}: {label}: expected an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{_FUNCTION}: {label}: expected an int >= 0, got {value!r}")
    return int(value)


def _point(tensor: Tensor, feeds: dict[Tensor, Any],
           variables: dict[Tensor, NDArray[np.float64]]) -> NDArray[np.float64]:
    value: NDArray[np.float64] = variables[tensor] if tensor in variables else feeds[tensor]
    return value


# -- assert_allclose / assert_outputs_close ----------------------------------------------------

