"""Outputs added to a recorded recurrent forward op after it was built: its training state,
when Graph.gradients needs it of an op built without ``training``, and a resetAfter GRU's
kept recurrent product (forward_matching.kept_product)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rnngraph._typing import GraphBuilder
    from rnngraph.graph import Operation


def forward_outputs(graph: GraphBuilder, op: Operation, wanted: Iterable[str]) -> dict[str, Tensor]:
    """The recurrent forward ``op``'s outputs by name, ``wanted`` among them: those it lacks
    are added in place, so the forward pass runs once for everything read from it. Its
    existing outputs, and the list the op returned when it was built, are unchanged."""
    names = list(op.attrs["outputs"])
    missing = [k for k in wanted if k not in names]
    if missing:
        dtype = op.outputs[0].dataType
        for k in missing:
            op.outputs.append(Tensor(graph, op, len(op.outputs),  # type: ignore[arg-type]
                                     op.attrs["shape_of"][k], dtype, f"{op.name}/{k}"))
        names += missing
        op.attrs["outputs"] = names
        op.compute = op.attrs["compute_for"](names)
        graph._plans.clear()  # plans that ran the op without them
    return dict(zip(names, op.outputs))
