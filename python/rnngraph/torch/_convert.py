"""Weights between ``torch.nn``'s single-layer RNN/LSTM/GRU and rnngraph's modules.

torch keeps two biases per direction (``b_ih``, ``b_hh``); rnngraph one (``bias``), plus the
GRU's ``secondaryBias`` inside the reset product. So: ``bias = b_ih + b_hh``, except for a
GRU's candidate block, where ``bias_o = b_in`` and ``secondaryBias = b_hn``. Gate orders:
torch's LSTM ``[i, f, g, o]`` is rnngraph's default ``[i, f, z, o]``; torch's GRU
``[r, z, n]`` is rnngraph's ``resetGateFirst`` ``[r, z, o]`` with ``resetAfter`` (torch's
only form). Going back, ``to_torch`` reorders gates where the descriptor's order differs,
and gives ``b_ih = bias``, ``b_hh = 0`` (a GRU's ``b_hn = secondaryBias``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import nn

from rnngraph.activation import RNNActivation
from rnngraph.descriptors import GRUDescriptor, LSTMDescriptor, SingleGateRNNDescriptor

if TYPE_CHECKING:
    from rnngraph.torch._cells import TorchCell
    from rnngraph.torch._modules import _RecurrentModule

Module = TypeVar("Module", bound="_RecurrentModule")


@dataclass(frozen=True)
class Twin:
    """A torch.nn class and how its gates line up with rnngraph's."""

    torch_type: type[nn.Module]
    torch_gates: str  # torch's gate order, in rnngraph's gate letters
    # torch's gate activations are the descriptor's defaults (nn.RNN: tanh or relu, its choice)
    fixed_activations: bool = True


TWINS = {
    "single_gate_rnn": Twin(nn.RNN, "h", fixed_activations=False),
    "lstm": Twin(nn.LSTM, "ifzo"),
    "gru": Twin(nn.GRU, "rzo"),
}


def gate_order(descriptor: Any) -> str:
    """rnngraph's gate order for ``descriptor`` (SPEC.md section 3), one letter per gate."""
    if isinstance(descriptor, LSTMDescriptor):
        return "izfo" if descriptor.forgetGateLast else "ifzo"
    if isinstance(descriptor, GRUDescriptor):
        return "rzo" if descriptor.resetGateFirst else "zro"
    return "h"


def reorder(blocks: torch.Tensor, source: str, target: str) -> torch.Tensor:
    """``blocks`` (gate blocks of equal size along dim 0, in order ``source``) in ``target``
    order."""
    parts = blocks.chunk(len(source), dim=0)
    return torch.cat([parts[source.index(gate)] for gate in target], dim=0)


def _torch_parameters(module: nn.Module, direction: int) -> dict[str, Any]:
    suffix = "_reverse" if direction else ""
    return {name: getattr(module, f"{name}_l0{suffix}", None)
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}


def _check_shapes(where: str, expected: dict[str, tuple[Any, tuple[int, ...]]]) -> None:
    """Each named tensor (None: absent, not checked) has its expected shape: a parameter
    replaced after construction is named here, not by a failing copy."""
    for name, (tensor, shape) in expected.items():
        if tensor is not None and tuple(tensor.shape) != shape:
            raise ValueError(f"{where}: {name}: expected shape {list(shape)}, got "
                             f"{list(tensor.shape)}")


def _check_convertible(where: str, twin: Twin, module: Any) -> None:
    if not isinstance(module, twin.torch_type):
        raise TypeError(f"{where}: expected a torch.nn.{twin.torch_type.__name__}, got "
                        f"{type(module).__name__}")
    problems = []
    if module.num_layers != 1:
        problems.append(f"num_layers={module.num_layers} (stack one module per layer)")
    if getattr(module, "proj_size", 0):
        problems.append(f"proj_size={module.proj_size} (no projection in rnngraph's LSTM)")
    if module.batch_first:
        problems.append("batch_first=True (rnngraph is time-major: transpose the input)")
    if module.dropout:
        problems.append(f"dropout={module.dropout} (apply nn.Dropout between layers)")
    for name, parameter in module.named_parameters():
        if parameter.device.type != "cpu":
            problems.append(f"{name} on device {parameter.device} (rnngraph runs on the CPU)")
    if problems:
        raise ValueError(f"{where}: cannot convert: {'; '.join(problems)}")


def from_torch(cls: type[Module], cell: TorchCell, module: Any) -> Module:
    where = f"rnngraph.torch.{cls.__name__}.from_torch"
    twin = TWINS[cell.op]
    _check_convertible(where, twin, module)
    D, H = (2 if module.bidirectional else 1), module.hidden_size
    has_bias = module.bias
    descriptor: Any
    if cell.op == "lstm":
        descriptor = LSTMDescriptor(bidirectional=module.bidirectional)
    elif cell.op == "gru":
        descriptor = GRUDescriptor(bidirectional=module.bidirectional, resetGateFirst=True,
                                   resetAfter=True)
    else:
        activations = {"tanh": RNNActivation.tanh, "relu": RNNActivation.relu}
        if module.nonlinearity not in activations:  # (an attribute changed after construction)
            raise ValueError(f"{where}: cannot convert: nonlinearity {module.nonlinearity!r} "
                             "(torch.nn.RNN has 'tanh' and 'relu')")
        activation = activations[module.nonlinearity]
        descriptor = SingleGateRNNDescriptor(bidirectional=module.bidirectional,
                                             activation=activation)
    dtype = module.weight_ih_l0.dtype
    parts = [_torch_parameters(module, d) for d in range(D)]
    GH = cell.spec.gates * H
    for d, part in enumerate(parts):
        suffix = "_l0_reverse" if d else "_l0"
        _check_shapes(where, {
            "weight_ih" + suffix: (part["weight_ih"], (GH, module.input_size)),
            "weight_hh" + suffix: (part["weight_hh"], (GH, H)),
            "bias_ih" + suffix: (part["bias_ih"] if has_bias else None, (GH,)),
            "bias_hh" + suffix: (part["bias_hh"] if has_bias else None, (GH,))})
    ours: Any = cls(module.input_size, H, bias=has_bias, descriptor=descriptor, dtype=dtype)
    with torch.no_grad():
        ours.inputWeight.copy_(torch.cat([p["weight_ih"] for p in parts]))
        recurrent = [p["weight_hh"] for p in parts]
        ours.recurrentWeight.copy_(torch.stack(recurrent) if D == 2 else recurrent[0])
        if has_bias:
            biases, secondary = [], []
            for p in parts:
                b_ih, b_hh = p["bias_ih"], p["bias_hh"]
                if cell.op == "gru":  # the candidate's b_hn sits inside the reset product
                    biases.append(torch.cat([(b_ih + b_hh)[:2 * H], b_ih[2 * H:]]))
                    secondary.append(b_hh[2 * H:])
                else:
                    biases.append(b_ih + b_hh)
            ours.bias.copy_(torch.cat(biases))
            if secondary:
                ours.secondaryBias.copy_(torch.cat(secondary))
    return ours  # type: ignore[no-any-return]


def _check_twin(where: str, twin: Twin, module: _RecurrentModule) -> None:
    descriptor: Any = module.descriptor
    problems = []
    if module.input_size is None:
        problems.append("no inputWeight (torch.nn always projects its input)")
    if descriptor.reverse and not descriptor.bidirectional:
        problems.append("reverse=True without bidirectional (torch.nn has no reverse-only layer)")
    defaults = type(descriptor)._activations if twin.fixed_activations else {}
    for name, value in defaults.items():
        if getattr(descriptor, name) != value:
            problems.append(f"{name}={getattr(descriptor, name).name} (torch.nn: {value.name})")
    if isinstance(descriptor, SingleGateRNNDescriptor) and descriptor.activation not in (
            RNNActivation.tanh, RNNActivation.relu):
        problems.append(f"activation={descriptor.activation.name} (torch.nn.RNN: tanh or relu)")
    if isinstance(descriptor, GRUDescriptor):
        if not descriptor.resetAfter:
            problems.append("resetAfter=False (torch.nn.GRU applies the reset after the product)")
        if descriptor.flipZ:
            problems.append("flipZ=True (torch.nn.GRU: h = (1 − z) ⊙ n + z ⊙ h)")
    if getattr(module, "peephole", None) is not None:
        problems.append("peepholes (torch.nn.LSTM has none)")
    if problems:
        raise ValueError(f"{where}: no torch.nn twin: {'; '.join(problems)}")


def to_torch(module: Any, cell: TorchCell) -> nn.Module:
    where = f"rnngraph.torch.{type(module).__name__}.to_torch"
    twin = TWINS[cell.op]
    _check_twin(where, twin, module)
    descriptor: Any = module.descriptor
    D, H = module.num_directions, module.hidden_size
    G = cell.spec.gates
    ours, theirs = gate_order(descriptor), twin.torch_gates
    # A secondaryBias without a bias (the bias set to None after construction) still needs
    # torch's biases: b_ih = 0 and b_hh = [0, 0, b_hn].
    secondary = getattr(module, "secondaryBias", None)
    has_bias = module.bias is not None or secondary is not None
    for label in ("inputWeight", "recurrentWeight"):
        if getattr(module, label) is None:
            raise TypeError(f"{where}: {label}: None; a torch.nn twin needs it")
    _check_shapes(where, {label: (getattr(module, label, None), shape) for label, shape
                          in module._parameter_shapes(bias=True, peephole=False).items()
                          if shape is not None})
    dtype = module.recurrentWeight.dtype
    keywords: dict[str, Any] = {"bias": has_bias, "bidirectional": D == 2, "dtype": dtype}
    if cell.op == "single_gate_rnn":
        keywords["nonlinearity"] = descriptor.activation.name
    result: Any = twin.torch_type(module.input_size, H, **keywords)
    with torch.no_grad():
        recurrent = module.recurrentWeight if D == 2 else module.recurrentWeight.unsqueeze(0)
        for d in range(D):
            target = _torch_parameters(result, d)
            rows = slice(d * G * H, (d + 1) * G * H)
            target["weight_ih"].copy_(reorder(module.inputWeight[rows], ours, theirs))
            target["weight_hh"].copy_(reorder(recurrent[d], ours, theirs))
            if has_bias:
                if module.bias is None:
                    target["bias_ih"].zero_()
                else:
                    target["bias_ih"].copy_(reorder(module.bias[rows], ours, theirs))
                target["bias_hh"].zero_()
                if secondary is not None:  # torch's b_hn
                    target["bias_hh"][2 * H:] = secondary[d * H:(d + 1) * H]
    return result  # type: ignore[no-any-return]
