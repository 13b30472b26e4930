"""``Graph.gradients``: reverse-mode differentiation over the recorded ops.

The backward walk is generic; what each op contributes is one entry of ``RULES``, keyed by
op kind. An RNN forward op's rule adds the matching gradient op (the RNN gradient ops of
SPEC.md section 6). ``of`` need not be a scalar: the gradient is that of ``sum(of)``, i.e.
the walk starts from a tensor of ones, as MPSGraph does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from rnngraph.ops.recurrent import forward_op, gradient_op

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from rnngraph.graph import Graph, Operation
    from rnngraph.tensor import Tensor

    # d(sum(of))/d(tensor) for the tensors reached so far.
    Cotangents = dict[Tensor, Tensor]
    # An op kind's rule: (graph, op, cotangents) -> {input label: its gradient}.
    Rule = Callable[[Graph, Operation, Cotangents], dict[str, Tensor]]


def _ones_like(graph: Graph, t: Tensor) -> Tensor:
    return graph._add("onesLike", None, {"x": t}, lambda a: [np.ones_like(a["x"])],
                      [("", t.shape, t.dataType)])[0]


def _zeros_like(graph: Graph, t: Tensor) -> Tensor:
    return graph._add("zerosLike", None, {"x": t}, lambda a: [np.zeros_like(a["x"])],
                      [("", t.shape, t.dataType)])[0]


def _add(graph: Graph, a: Tensor, b: Tensor) -> Tensor:
    return graph._add("add", None, {"x": a, "y": b}, lambda v: [v["x"] + v["y"]],
                      [("", a.shape, a.dataType)])[0]


def _rnn_rule(graph: Graph, op: Operation, cotangent: Cotangents) -> dict[str, Tensor]:
    """d(inputs) of an RNN forward op, through its gradient op."""
    spec, descriptor = op.attrs["spec"], op.attrs["descriptor"]
    outputs = dict(zip(op.attrs["outputs"], op.outputs))
    if "zState" in outputs and outputs["zState"] in cotangent:
        raise ValueError(f"gradients: {op.name}: zState is a saved training state, not differentiable")
    if "c" in outputs and outputs["c"] in cotangent:
        raise NotImplementedError(
            f"gradients: {op.name}: differentiating through the LSTM cell sequence c is not "
            "supported (LSTMGradients takes dL/dc for the final cell only)")
    inputs = dict(op.inputs)
    if "zState" in outputs:
        saved = outputs
    else:  # the op did not keep its training state: record a training twin of it
        twin = descriptor.copy()
        twin.training = True
        names = list(spec.training_outputs)
        tensors = forward_op(graph, spec, inputs, twin, f"{op.name}/training", lambda d: names)
        saved = dict(zip(names, tensors))
    arguments = dict(inputs, sourceGradient=cotangent[outputs["h"]], zState=saved["zState"])
    if "outputFwd" in spec.gradient_required:
        arguments["outputFwd"] = saved["h"]
    if "cellOutputFwd" in spec.gradient_required:
        arguments["cellOutputFwd"] = saved["c"]
    grads = gradient_op(graph, spec, arguments, descriptor, f"{op.name}/gradients")
    returned = grads[0].op.attrs["returned"]
    return dict(zip(returned, grads))


def _add_rule(graph: Graph, op: Operation, cotangent: Cotangents) -> dict[str, Tensor]:
    g = cotangent[op.outputs[0]]
    return {"x": g, "y": g}


RULES: dict[str, Rule] = {
    "singleGateRNN": _rnn_rule,
    "LSTM": _rnn_rule,
    "GRU": _rnn_rule,
    "add": _add_rule,
    "onesLike": lambda graph, op, cotangent: {},
    "zerosLike": lambda graph, op, cotangent: {},
}


def gradients(graph: Graph, of: Tensor, with_: Iterable[Tensor]) -> dict[Tensor, Tensor]:
    of = graph._own(of, "gradients: of")
    targets = [graph._own(t, "gradients: with_") for t in with_]
    cotangent = {of: _ones_like(graph, of)}
    for op in reversed(graph._ops_needed([of])):
        if op.kind in ("placeholder", "constant") or not any(t in cotangent for t in op.outputs):
            continue
        rule = RULES.get(op.kind)
        if rule is None:
            raise NotImplementedError(f"gradients: no gradient rule for {op.kind} ops")
        for label, grad in rule(graph, op, cotangent).items():
            source = op.inputs[label]  # a given input: rules return no gradient for None
            cotangent[source] = (  # type: ignore[index]
                grad if source not in cotangent else _add(graph, cotangent[source], grad))
    return {t: cotangent[t] if t in cotangent else _zeros_like(graph, t) for t in targets}
