"""The three cells as the PyTorch adapter sees them: each op's inputs (the Swift labels, in
Swift order, read from ``rnngraph.Graph``'s methods so that both surfaces always agree), the
descriptor options that change the math, and the op's outputs."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rnngraph.graph import Graph
from rnngraph.ops.gru import GRU_CELL
from rnngraph.ops.lstm import LSTM_CELL
from rnngraph.ops.single_gate_rnn import SINGLE_GATE_RNN

if TYPE_CHECKING:
    from rnngraph.descriptors import _Descriptor
    from rnngraph.ops.recurrent import CellSpec

# Graph method parameters that are not tensors.
_NOT_INPUTS = ("self", "descriptor", "name")
# The forward op's inputs that a module takes in its call, not as parameters.
_NOT_PARAMETERS = ("source", "initState", "initCell", "mask")
# The forward op's saved tensors that its gradient op reads (SPEC.md section 6).
_SAVED = {"outputFwd": "h", "cellOutputFwd": "cellSequence", "zState": "zState"}


def _labels(method: str) -> tuple[str, ...]:
    parameters = inspect.signature(getattr(Graph, method)).parameters
    return tuple(name for name in parameters if name not in _NOT_INPUTS)


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per cell
class TorchCell:
    """One cell's ops for torch: ``torch.ops.rnngraph.<op>`` and ``<op>_gradients``."""

    spec: CellSpec
    op: str  # the torch op's name, e.g. "lstm"
    # Derived from ``spec`` by __post_init__ (not arguments): plain fields, read on every call
    # (and traced by torch.compile).
    forward_inputs: tuple[str, ...] = field(init=False)  # source, recurrentWeight, ...
    # The forward inputs that a module holds as parameters (recurrentWeight, inputWeight, ...).
    parameters: tuple[str, ...] = field(init=False)
    gradient_inputs: tuple[str, ...] = field(init=False)  # source, ..., sourceGradient, ...
    # ``(name, default)`` of the descriptor properties that change the math: flags (bool) and
    # activations (RNNActivation's raw value), in the descriptor's order.
    options: tuple[tuple[str, bool | int], ...] = field(init=False)
    has_cell: bool = field(init=False)  # the LSTM: a cell state beside h
    # Inputs every call gives (the others are optional, None when absent).
    required: tuple[str, ...] = field(init=False)
    # The forward op's final-state outputs: ``state`` (h at each direction's last processed
    # step), and ``cell`` for the LSTM.
    final_states: tuple[str, ...] = field(init=False)
    # h and the final states: the outputs a module returns and autograd differentiates.
    differentiable_outputs: tuple[str, ...] = field(init=False)
    # The forward op's outputs: h, the final states, then what the gradient op reads (the
    # LSTM's cell sequence, zState).
    outputs: tuple[str, ...] = field(init=False)
    # {gradient op input: forward op output} for the saved tensors it reads (shared: not to
    # be changed).
    saved_outputs: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:  # (frozen: each field set through object.__setattr__)
        descriptor: _Descriptor = self.spec.descriptor_type()
        options = tuple((name, value) for name, value in descriptor.as_dict().items()
                        if name not in self.spec.forward_only_flags)
        object.__setattr__(self, "options", options)
        has_cell = self.spec is LSTM_CELL
        object.__setattr__(self, "has_cell", has_cell)
        forward_inputs = _labels(self.spec.name)
        object.__setattr__(self, "forward_inputs", forward_inputs)
        object.__setattr__(self, "parameters", tuple(
            label for label in forward_inputs if label not in _NOT_PARAMETERS))
        gradient_inputs = _labels(self.spec.gradient_name)
        object.__setattr__(self, "gradient_inputs", gradient_inputs)
        object.__setattr__(self, "required", ("source", "recurrentWeight", "sourceGradient",
                                              "zState", *self.spec.gradient_required))
        final_states = ("state", "cell") if has_cell else ("state",)
        object.__setattr__(self, "final_states", final_states)
        object.__setattr__(self, "differentiable_outputs", ("h", *final_states))
        saved = ("cellSequence", "zState") if has_cell else ("zState",)
        object.__setattr__(self, "outputs", ("h", *final_states, *saved))
        object.__setattr__(self, "saved_outputs", {label: _SAVED[label]
                                                   for label in gradient_inputs
                                                   if label in _SAVED})

    def descriptor_options(self, descriptor: Any) -> dict[str, bool | int]:
        """The options of an rnngraph descriptor of this cell, as the op's arguments."""
        if not isinstance(descriptor, self.spec.descriptor_type):
            raise TypeError(f"descriptor: expected rnngraph.{self.spec.descriptor_type.__name__}"
                            f", got {type(descriptor).__name__}")
        values = descriptor.as_dict()
        return {name: values[name] for name, _ in self.options}


SINGLE_GATE = TorchCell(SINGLE_GATE_RNN, "single_gate_rnn")
LSTM = TorchCell(LSTM_CELL, "lstm")
GRU = TorchCell(GRU_CELL, "gru")
CELLS = (SINGLE_GATE, LSTM, GRU)
