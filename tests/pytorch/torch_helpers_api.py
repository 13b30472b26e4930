"""Small builders shared by the PyTorch adapter's API tests (test_torch_modules, _errors,
_zero_copy, _threads, _vmap): the three cells, a module with seeded weights, seeded inputs,
and the raw ops' keyword arguments."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch
from torch import nn

import rnngraph.torch as rt
from rnngraph import GRUDescriptor, LSTMDescriptor, SingleGateRNNDescriptor


class Cell(NamedTuple):
    module: type[rt.SingleGateRNN | rt.LSTM | rt.GRU]
    descriptor: type[Any]
    torch_module: type[nn.RNNBase]
    gates: int


CELLS = {
    "single_gate_rnn": Cell(rt.SingleGateRNN, SingleGateRNNDescriptor, nn.RNN, 1),
    "lstm": Cell(rt.LSTM, LSTMDescriptor, nn.LSTM, 4),
    "gru": Cell(rt.GRU, GRUDescriptor, nn.GRU, 3),
}
I, H = 3, 4


def build(cell: str, input_size: int | None = I, *, bias: bool = True, peephole: bool = False,
          dtype: torch.dtype = torch.float64, seed: int = 0, **options: Any) -> Any:
    """``CELLS[cell].module(input_size, H)`` with the descriptor ``options`` and weights drawn
    from a generator seeded with ``seed`` (±1/√H, as the module's own initialisation)."""
    kind = CELLS[cell]
    extra = {"peephole": peephole} if peephole else {}
    module = kind.module(input_size, H, bias=bias, descriptor=kind.descriptor(**options),
                         dtype=dtype, **extra)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.uniform_(-1 / math.sqrt(H), 1 / math.sqrt(H), generator=generator)
    return module


def directions(module: Any) -> int:
    return 2 if module.descriptor.bidirectional else 1


def features(module: Any) -> int:
    """The input's last size: I, or D·G·H for a module without inputWeight."""
    if module.input_size is not None:
        return int(module.input_size)
    return directions(module) * module._cell.spec.gates * module.hidden_size


def sample(module: Any, T: int = 5, N: int = 3, *, seed: int = 1) -> tuple[torch.Tensor, Any]:
    """A seeded input ``[T, N, features]`` and hx (``(h0, c0)`` for the LSTM), ``[D, N, H]``,
    of the module's dtype."""
    generator = torch.Generator().manual_seed(seed)
    dtype = module.recurrentWeight.dtype

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=dtype)

    x = draw(T, N, features(module))
    state = (directions(module), N, module.hidden_size)
    hx = (draw(*state), draw(*state)) if isinstance(module, rt.LSTM) else draw(*state)
    return x, hx


def raw_inputs(cell: str, dtype: torch.dtype = torch.float64) -> dict[str, Any]:
    """Valid keyword arguments of torch.ops.rnngraph.<cell>: every tensor input but the mask
    (T=5, N=2, unidirectional; the GRU with resetAfter for secondaryBias)."""
    G, generator = CELLS[cell].gates, torch.Generator().manual_seed(3)
    shapes = {"source": (5, 2, I), "recurrentWeight": (G * H, H), "inputWeight": (G * H, I),
              "bias": (G * H,), "initState": (2, H)}
    shapes.update({"lstm": {"initCell": (2, H), "peephole": (4 * H,)},
                   "gru": {"secondaryBias": (H,)}}.get(cell, {}))
    inputs = {label: torch.randn(shape, generator=generator, dtype=dtype) / 2
              for label, shape in shapes.items()}
    return inputs | ({"resetAfter": True} if cell == "gru" else {})
