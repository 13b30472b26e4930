"""check_gradients' argument checks: the tensors to check and the dtypes on the path between
them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rnngraph.autodiff import _on_paths
from rnngraph.dtypes import DataType
from rnngraph.graph import Graph
from rnngraph.tensor import Tensor

_FUNCTION = "check_gradients"  # what the errors name


def _check_float64(of: Tensor, wanted: list[Tensor]) -> None:
    """``of``, ``with_`` and every float tensor on a path between them are float64.

    The path is the one ``Graph.gradients`` differentiates along (``autodiff._on_paths``):
    float tensors that ``of`` needs and that depend on a tensor of ``with_`` through float
    tensors (an integer tensor on the way has no gradient, so it ends the path)."""
    for label, tensor in [("of", of)] + [("with_", t) for t in wanted]:
        if tensor.dataType is not DataType.float64:
            raise TypeError(f"{_FUNCTION}: {label}: {tensor.name!r} is "
                            f"{tensor.dataType.value}; the check needs float64 (build the "
                            "graph in float64 to check its gradients: central differences "
                            "in float32 measure float32's rounding)")
    needed = of.graph._ops_needed([of])
    ops, live = _on_paths(needed, set(wanted))
    read = {t for op in needed for t in op.inputs.values() if t is not None} | {of}  # of's inputs
    on_path = [t for op in ops for t in op.outputs
               if t in live and t in read and t.dataType is not DataType.float64]
    if on_path:
        names = ", ".join(f"{t.name!r} ({t.dataType.value})" for t in on_path[:5])
        more = f" and {len(on_path) - 5} more" if len(on_path) > 5 else ""
        raise TypeError(f"{_FUNCTION}: of: the path from with_ to {of.name!r} passes through "
                        f"{names}{more}; the check needs float64 all the way (build the "
                        "graph in float64)")


def _with(graph: Graph, with_: object) -> list[Tensor]:
    """``with_`` (a Tensor or a list of them) as a non-empty list of distinct Tensors of
    ``graph``."""
    where = f"{_FUNCTION}: with_"
    if isinstance(with_, Tensor):
        return [graph._own(with_, where)]
    if isinstance(with_, (str, bytes, Mapping)) or not isinstance(with_, Iterable):
        raise TypeError(f"{where}: expected a Tensor or a list of Tensors, got "
                        f"{type(with_).__name__}")
    wanted = [graph._own(t, where) for t in with_]
    if not wanted:
        raise ValueError(f"{where}: expected at least one tensor, got none")
    seen: set[Tensor] = set()
    for t in wanted:
        if t in seen:
            raise ValueError(f"{where}: {t.name!r} is given twice")
        seen.add(t)
    return wanted
