"""``Graph.gradients``: reverse-mode differentiation over the recorded ops.

The backward walk is generic and knows no op: what each op contributes is its entry in
``RULES``, one rule per op kind, in one table. The walk visits only the ops on a path from
a tensor of ``with_`` to ``of``, and asks each rule only for the inputs on such a path.
Integer tensors carry no gradient. ``of`` need not be a scalar: the gradient is that of
``sum(of)``, i.e. the walk starts from a tensor of ones, as MPSGraph does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rnngraph.ops import (
    activations,
    arithmetic,
    conversion,
    indexing,
    loss,
    operands,
    optimizers,
    reductions,
    reshaping,
    slicing,
    state,
)
from rnngraph.ops.forward_matching import SAVED_OUTPUTS
from rnngraph.ops.forward_outputs import forward_outputs
from rnngraph.ops.operands import ones_like, record, zeros_like
from rnngraph.ops.recurrent import gradient_op
from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from rnngraph._typing import GraphBuilder, Rule
    from rnngraph.graph import Graph, Operation


def _accumulate(graph: GraphBuilder, a: Tensor, b: Tensor) -> Tensor:
    """Two gradients of one tensor (it feeds two ops), summed."""
    return record(graph, "accumulate", None, {"x": a, "y": b}, lambda v: [v["x"] + v["y"]],
                  [(a.shape, a.dataType)])[0]


def training_outputs(graph: GraphBuilder, op: Operation) -> dict[str, Tensor]:
    """The recurrent forward ``op``'s outputs by name, with its training state: an op built
    without ``training`` becomes a training op in place (its existing outputs unchanged, the
    state added), so the forward pass runs once for the outputs and the gradient."""
    return forward_outputs(graph, op, op.attrs["spec"].training_outputs)


def _check_constant_inputs(op: Operation, labels: tuple[str, ...], wanted: set[str],
                           targets: tuple[Tensor, ...]) -> None:
    """Inputs the op's rule takes as constants (``CONSTANT_INPUTS``). One that is itself a
    tensor of with_ gets zeros, as a constant would; one that with_ reaches through other ops,
    or that is also another input of the op, would silently lose its share: refused."""
    for label in labels:
        if label not in wanted:
            continue
        tensor = op.inputs[label]
        also_input = any(t is tensor for other, t in op.inputs.items() if other != label)
        if also_input or not any(t is tensor for t in targets):
            raise ValueError(f"gradients: {op.name}: {label} depends on a tensor of with_, but "
                             f"{op.kind} takes it as a constant and gives no gradient for it; "
                             "feed it through a placeholder or constant that with_ does not "
                             "reach")


def _rnn_rule(graph: GraphBuilder, op: Operation, grads: list[Tensor | None],
              wanted: set[str]) -> dict[str, Tensor]:
    """d(inputs) of a recurrent forward op, through its gradient op (SPEC.md section 6). The
    LSTM's cell sequence c takes a gradient at every step (an internal input of the kernel)."""
    spec, descriptor = op.attrs["spec"], op.attrs["descriptor"]
    given = dict(zip(op.attrs["outputs"], grads))
    for saved in ("zState", "recurrentProduct"):
        if given.get(saved) is not None:
            raise ValueError(f"gradients: {op.name}: {saved} is a saved training state, not "
                             "differentiable")
    outputs = training_outputs(graph, op)
    source_gradient = given.get("h")
    if source_gradient is None:  # only c is used: dL/dh = 0
        source_gradient = zeros_like(graph, outputs["h"])
    arguments = dict(op.inputs, sourceGradient=source_gradient)
    for label, name in SAVED_OUTPUTS.items():  # zState, and the saved h or c the cell reads
        if label == "zState" or label in spec.gradient_required:
            arguments[label] = outputs[name]
    if given.get("c") is not None:
        arguments["cellSequenceGradient"] = given["c"]
    result = gradient_op(graph, spec, arguments, descriptor, f"{op.name}/gradients")
    returned = result[0].op.attrs["returned"]
    return {label: g for label, g in zip(returned, result) if label in wanted}


RULES: dict[str, Rule] = {
    "singleGateRNN": _rnn_rule,
    "LSTM": _rnn_rule,
    "GRU": _rnn_rule,
    "accumulate": lambda graph, op, grads, wanted: {"x": grads[0], "y": grads[0]},  # type: ignore[dict-item]
    "onesLike": lambda graph, op, grads, wanted: {},
    "zerosLike": lambda graph, op, grads, wanted: {},
    **operands.GRADIENT_RULES,
    **state.GRADIENT_RULES,
    **arithmetic.GRADIENT_RULES,
    **activations.GRADIENT_RULES,
    **reductions.GRADIENT_RULES,
    **loss.GRADIENT_RULES,
    **indexing.GRADIENT_RULES,
    **reshaping.GRADIENT_RULES,
    **slicing.GRADIENT_RULES,
    **conversion.GRADIENT_RULES,
    **optimizers.GRADIENT_RULES,
}
# Inputs a rule gives no gradient for, by rule: the recurrent ops' mask (SPEC.md section 6).
CONSTANT_INPUTS: dict[Rule, tuple[str, ...]] = {_rnn_rule: ("mask",)}


def _on_paths(ops: list[Operation], sources: set[Tensor]) -> tuple[list[Operation], set[Tensor]]:
    """The ops (of ``ops``, in graph order) that read a float tensor depending on one of
    ``sources``, and those tensors."""
    live = {t for t in sources if t.dataType.is_float}
    reached = []
    for op in ops:
        if any(t is not None and t in live for t in op.inputs.values()):
            reached.append(op)
            live.update(t for t in op.outputs if t.dataType.is_float)
    return reached, live


def gradients(graph: Graph, of: Tensor, with_: Iterable[Tensor]) -> dict[Tensor, Tensor]:
    of = graph._own(of, "gradients: of")
    if isinstance(with_, Tensor) or not isinstance(with_, Iterable):
        raise TypeError("gradients: with_: expected a list of Tensors, "
                        f"got {type(with_).__name__}")
    targets = tuple(graph._own(t, "gradients: with_") for t in with_)
    if not of.dataType.is_float:
        raise TypeError(f"gradients: of: {of.name!r} is {of.dataType.value}; only float "
                        "tensors have gradients")
    key = (of, frozenset(targets))  # the same tensors in any order: what was recorded
    if key in graph._gradients:
        return {t: graph._gradients[key][t] for t in targets}
    ops, live = _on_paths(graph._ops_needed([of]), set(targets))
    cotangent: dict[Tensor, Tensor] = {}
    if of in live:
        cotangent[of] = ones_like(graph, of)
    for op in reversed(ops):
        grads = [cotangent.get(t) for t in op.outputs]
        if all(g is None for g in grads):
            continue
        rule = RULES.get(op.kind)
        if rule is None:
            raise ValueError(f"gradients: of: depends on {op.name!r} through its inputs, but "
                             f"there is no gradient rule for {op.kind} ops")
        wanted = {label for label, t in op.inputs.items() if t is not None and t in live}
        _check_constant_inputs(op, CONSTANT_INPUTS.get(rule, ()), wanted, targets)
        for label, grad in rule(graph, op, grads, wanted).items():
            source = op.inputs[label]
            if source is None or source not in live:
                continue
            cotangent[source] = (grad if source not in cotangent
                                 else _accumulate(graph, cotangent[source], grad))
    result = {t: cotangent[t] if t in cotangent else zeros_like(graph, t) for t in targets}
    graph._gradients[key] = result
    return dict(result)
