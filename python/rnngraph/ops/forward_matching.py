"""A gradient op wired to a forward op of the same graph: its descriptor must agree, and
inputs other than the forward op's are legal (as in MPSGraph) but warned about. Wired to
exactly its forward op's inputs and outputs, a resetAfter GRU's gradient op reads the
recurrent product that its forward op kept (``kept_product``) instead of computing it again."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from rnngraph.activation import RNNActivation
from rnngraph.ops.forward_outputs import forward_outputs
from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from rnngraph._typing import GraphBuilder
    from rnngraph.descriptors import _Descriptor
    from rnngraph.graph import Operation
    from rnngraph.ops.recurrent import CellSpec

def forward_of(spec: CellSpec, zState: object) -> Operation | None:
    """The forward op of this graph that produced zState, or None (zState fed or computed)."""
    if not isinstance(zState, Tensor) or zState.op.kind != spec.name:
        return None
    return zState.op


# A gradient op's saved forward tensors: the output of its forward op each label reads.
SAVED_OUTPUTS = {"zState": "zState", "cellOutputFwd": "c", "outputFwd": "h"}


def _outputs_of(producer: Operation) -> dict[str, Tensor]:
    """A forward op's outputs by name (h, c, zState, ...)."""
    return dict(zip(producer.attrs["outputs"], producer.outputs))


def _serves_as(spec: CellSpec, descriptor: _Descriptor, label: str, output: str) -> bool:
    """Whether the forward op's ``output`` computes exactly what ``label`` would: a
    single-gate RNN's backward rebuilds h = act(zState) and act's derivative from that h, so
    where act(act(z)) = act(z) (relu, none) its h given as zState gives the same gradients
    (an inference op's h, kept instead of a training op's zState)."""
    return (spec.name == "singleGateRNN" and label == "zState" and output == "h"
            and getattr(descriptor, "activation", None) in (RNNActivation.relu, RNNActivation.none))


def check_forward_outputs(op: str, spec: CellSpec, descriptor: _Descriptor,
                          inputs: Mapping[str, object]) -> None:
    """A saved forward tensor (zState, cellOutputFwd, outputFwd) that is an output of a
    forward op of this graph must be that op's output of the same name: the forward op's h
    given as zState (same shape for a single-gate RNN) or as cellOutputFwd (the LSTM's c)
    computes the gradients of no computation, silently; unless it serves as that output
    exactly (``_serves_as``)."""
    for label, expected in SAVED_OUTPUTS.items():
        tensor = inputs.get(label)
        if not isinstance(tensor, Tensor) or tensor.op.kind != spec.name:
            continue
        got = tensor.op.attrs["outputs"][tensor.index]  # (its outputs' names, in order)
        if got != expected and not _serves_as(spec, descriptor, label, got):
            raise ValueError(f"{op}: {label}: {tensor.name!r} is output {got!r} of the "
                             f"{spec.name} op {tensor.op.name!r}, not its {expected!r}")


def check_matching_forward(op: str, spec: CellSpec, descriptor: _Descriptor,
                           zState: object) -> None:
    """When zState comes from a forward op of this graph, the descriptors must agree."""
    producer = forward_of(spec, zState)
    if producer is None:
        return
    theirs = producer.attrs["descriptor"].as_dict()
    ours = descriptor.as_dict()
    for key in ours:
        if key in spec.forward_only_flags:
            continue
        if key == "reverse" and ours["bidirectional"] and theirs["bidirectional"]:
            continue  # ignored when bidirectional (SPEC.md section 3)
        if ours[key] != theirs[key]:
            raise ValueError(f"{op}: descriptor: {key}={ours[key]!r} differs from the {spec.name} op "
                             f"{producer.name!r} that produced zState ({key}={theirs[key]!r})")


def _same_input(ours: Tensor, theirs: Tensor) -> bool:
    """The same tensor, or two constants of equal shape, dataType and values (an array given
    to both ops becomes one constant for each)."""
    if ours is theirs:
        return True
    a, b = ours.op, theirs.op
    return (a.kind == b.kind == "constant" and ours.dataType == theirs.dataType
            and np.array_equal(a.attrs["value"], b.attrs["value"], equal_nan=True))


def _differences(spec: CellSpec, producer: Operation,
                 inputs: Mapping[str, Tensor | None]) -> list[tuple[str, str]]:
    """Each input of the forward op ``producer`` that the gradient op's ``inputs`` give
    differently: (label, how)."""
    differ = []
    for label, theirs in producer.inputs.items():
        ours = inputs.get(label)
        if ours is None and theirs is None or (
                ours is not None and theirs is not None and _same_input(ours, theirs)):
            continue
        if ours is None:
            differ.append((label, f"given to {spec.name}, not here"))
        elif theirs is None:
            differ.append((label, f"not given to {spec.name}"))
        else:
            differ.append((label, f"{ours.name!r} instead of {theirs.name!r}"))
    return differ


def _other_saved(producer: Operation, inputs: Mapping[str, Tensor | None]) -> list[tuple[str, str]]:
    """Each saved sequence besides zState (cellOutputFwd, outputFwd) that another forward op
    of ``producer``'s kind made: (label, how). Its c or h of the same shapes is read as given
    (as in MPSGraph), but the gradients are then those of no computation. (A fed one may hold
    the producer's values: not warned.)"""
    outputs = _outputs_of(producer)
    differ = []
    for label in ("cellOutputFwd", "outputFwd"):
        given = inputs.get(label)
        if given is not None and given.op.kind == producer.kind and given.op is not producer:
            output = SAVED_OUTPUTS[label]
            own = outputs[output].name if output in outputs else f"{producer.name}/{output}"
            differ.append((label, f"{given.name!r} instead of its output {own!r}"))
    return differ


def warn_unmatched_inputs(op: str, spec: CellSpec, gradient: Operation) -> None:
    """When zState comes from a forward op of this graph, warn (MPSGraph allows it) about
    each of that op's inputs the gradient op was given differently: its gradients are then
    those of another computation."""
    producer = forward_of(spec, gradient.inputs["zState"])
    if producer is None:
        return
    differ = _differences(spec, producer, gradient.inputs) + _other_saved(producer,
                                                                          gradient.inputs)
    if differ:
        labels = ", ".join(label for label, _ in differ)
        details = "; ".join(f"{label}: {why}" for label, why in differ)
        warnings.warn(f"{op}: {labels}: not those of the {spec.name} op {producer.name!r} "
                      f"that produced zState ({details}); {op} {gradient.name!r} then computes "
                      "the gradients of a different computation", UserWarning, stacklevel=4)


def kept_product(graph: GraphBuilder, spec: CellSpec, descriptor: _Descriptor,
                 inputs: Mapping[str, Tensor | None]) -> Tensor | None:
    """The internal ``recurrentProduct`` [T, N, D·H] of the forward op that produced
    ``inputs``' zState, for its gradient op: hm·R_oᵀ + b2 of every step (SPEC.md section 5),
    which a resetAfter GRU's forward op keeps as it goes and its gradient op would otherwise
    compute again in one product [T·N, H] x [H, H]. Only when the gradient op reads exactly
    that op's computation: its outputFwd and every input are the forward op's own (a gradient
    op wired otherwise computes the product from what it was given). None when not kept."""
    producer = forward_of(spec, inputs["zState"])
    if producer is None or not spec.keeps_product(descriptor):
        return None
    outputs = _outputs_of(producer)
    if inputs.get("outputFwd") is not outputs.get("h") or _differences(spec, producer, inputs):
        return None
    return forward_outputs(graph, producer, ["recurrentProduct"])["recurrentProduct"]
