"""``rnngraph.torch.SingleGateRNN``, ``LSTM`` and ``GRU``: drop-ins for a single-layer,
time-major ``torch.nn.RNN``/``LSTM``/``GRU`` that run rnngraph's cells through
``torch.ops.rnngraph.*`` (so autograd, ``torch.compile`` and ``torch.export`` see one op).

Parameters are named after the Swift labels and laid out as in SPEC.md section 1:
``inputWeight`` ``[D·G·H, I]``, ``recurrentWeight`` ``[G·H, H]`` (``[2, G·H, H]``
bidirectional), ``bias`` ``[D·G·H]``, the LSTM's ``peephole`` ``[4H]`` (``[2, 4H]``) and a
resetAfter GRU's ``secondaryBias`` ``[D·H]``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import nn

from rnngraph.descriptors import GRUDescriptor, LSTMDescriptor, SingleGateRNNDescriptor
from rnngraph.ops.arguments import is_integer
from rnngraph.torch import _cells, _convert, _direct
from rnngraph.torch._arrays import FLOATS, check_tensor

if TYPE_CHECKING:
    from typing_extensions import Self

    from rnngraph.descriptors import _Descriptor

State = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


def _size(where: str, name: str, size: object) -> int:
    """A positive Python or NumPy int (not a bool) as an int, else a ValueError naming it."""
    if not is_integer(size) or size < 1:
        raise ValueError(f"{where}: {name}: expected a positive int, got {size!r}")
    return int(size)


class _RecurrentModule(nn.Module):
    """What the three modules share; each adds its cell (and the LSTM its peephole flag)."""

    _cell: ClassVar[_cells.TorchCell]
    # The parameters (SPEC.md section 1 layouts); None where the module has none.
    inputWeight: nn.Parameter | None
    recurrentWeight: nn.Parameter
    bias: nn.Parameter | None

    def __init__(self, input_size: int | None, hidden_size: int, *, bias: bool = True,
                 descriptor: _Descriptor | None = None, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None, batch_first: bool = False,
                 peephole: bool = False) -> None:
        super().__init__()
        where = f"rnngraph.torch.{type(self).__name__}"
        if batch_first:
            raise ValueError(f"{where}: batch_first: rnngraph's cells are time-major; pass "
                             "[T, N, I] input (input.transpose(0, 1) of a batch-first one)")
        if device is not None:
            try:
                kind = torch.device(device).type
            except (RuntimeError, TypeError) as error:
                raise ValueError(f"{where}: device: {error}") from None
            if kind != "cpu":
                raise ValueError(f"{where}: device: rnngraph computes on the CPU, got {device}")
        input_size = None if input_size is None else _size(where, "input_size", input_size)
        hidden_size = _size(where, "hidden_size", hidden_size)
        descriptor = self._cell.spec.descriptor_type() if descriptor is None else descriptor
        try:
            self._options = self._cell.descriptor_options(descriptor)  # (checks its type)
        except TypeError as error:
            raise TypeError(f"{where}: {error}") from None
        self._descriptor = descriptor.copy()
        self.input_size, self.hidden_size = input_size, hidden_size
        dtype = torch.get_default_dtype() if dtype is None else dtype
        if dtype not in (torch.float32, torch.float64):
            raise TypeError(f"{where}: dtype: expected torch.float32 or torch.float64, "
                            f"got {dtype}")
        for name, shape in self._parameter_shapes(bias, peephole).items():
            try:
                parameter = None if shape is None else nn.Parameter(
                    torch.empty(shape, dtype=dtype, device=device))
            except (RuntimeError, TypeError) as error:  # torch's allocator: "can't allocate
                # memory"; a size past int64 (4·H for H = 2**62): "Overflow when unpacking"
                raise MemoryError(f"{where}: {name}: cannot allocate {list(shape or ())} of "
                                  f"{dtype}: {error}") from None
            self.register_parameter(name, parameter)
        self.reset_parameters()

    # --- layout ------------------------------------------------------------------------

    @property
    def num_directions(self) -> int:
        return 2 if self._options["bidirectional"] else 1

    @property
    def descriptor(self) -> _Descriptor:
        """A copy of the module's descriptor (the module keeps its own)."""
        return self._descriptor.copy()

    def _parameter_shapes(self, bias: bool,
                          peephole: bool) -> dict[str, tuple[int, ...] | None]:
        G, H, D = self._cell.spec.gates, self.hidden_size, self.num_directions
        shapes: dict[str, tuple[int, ...] | None] = {
            "inputWeight": None if self.input_size is None else (D * G * H, self.input_size),
            "recurrentWeight": (2, G * H, H) if D == 2 else (G * H, H),
            "bias": (D * G * H,) if bias else None,
        }
        if peephole:  # (the LSTM's)
            shapes["peephole"] = (2, 4 * H) if D == 2 else (4 * H,)
        if bias and self._options.get("resetAfter"):  # b2 of a resetAfter GRU
            shapes["secondaryBias"] = (D * H,)
        return shapes

    def reset_parameters(self) -> None:
        """Every parameter uniform in ±1/√H, as torch.nn's recurrent layers."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    def _op_inputs(self) -> dict[str, torch.Tensor | None]:
        """The parameters by label, None where absent: read as attributes, so that a
        parametrization (``torch.nn.utils.parametrizations.weight_norm``, ``orthogonal``) or
        pruning (``torch.nn.utils.prune``), which replace a parameter by a computed tensor of
        its name, give the tensor they compute."""
        return {label: getattr(self, label, None) for label in self._cell.parameters}

    # --- forward -------------------------------------------------------------------------

    def forward(self, input: torch.Tensor, hx: State | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, State]:
        """``input`` ``[T, N, I]`` (or unbatched ``[T, I]``); without inputWeight the
        projected ``[T, N, D·G·H]``. ``hx``: h0 ``[D, N, H]`` (LSTM: ``(h0, c0)``), or None
        for zeros. ``mask``: broadcastable to ``[T, N, D·H]`` (SPEC.md section 5: it
        multiplies the previous state inside the recurrent products), float or bool.

        Returns ``(output, h_n)`` (LSTM: ``(output, (h_n, c_n))``): output ``[T, N, D·H]``,
        h_n and c_n ``[D, N, H]``, as torch.nn returns them."""
        where = f"rnngraph.torch.{type(self).__name__}"
        parameters = self._op_inputs()
        recurrent = parameters["recurrentWeight"]
        if recurrent is None or (self.input_size is not None and parameters["inputWeight"] is None):
            label = "recurrentWeight" if recurrent is None else "inputWeight"
            raise TypeError(f"{where}: {label}: None; the module needs it (input_size="
                            f"{self.input_size}): assign an nn.Parameter of its shape")
        dtype = recurrent.dtype
        if dtype not in FLOATS:  # (the module's, not the input's)
            raise TypeError(f"{where}: recurrentWeight: the module's parameters are {dtype}; "
                            "rnngraph computes in float32 or float64: call .float() or "
                            ".double() on the module")
        # A module on meta (moved there, or built under torch.device("meta")) takes meta
        # tensors: the op's fake kernel gives the outputs' shapes, as torch.nn's modules do.
        meta = recurrent.is_meta
        check_tensor(f"{where}: input", input, dtype, meta)
        unbatched = input.dim() == 2
        source = input.unsqueeze(1) if unbatched else input
        G, H, D = self._cell.spec.gates, self.hidden_size, self.num_directions
        features = D * G * H if self.input_size is None else self.input_size
        if source.dim() != 3 or source.shape[2] != features:
            raise ValueError(f"{where}: input: expected time-major [T, N, {features}] (or "
                             f"unbatched [T, {features}]), got shape {list(input.shape)}")
        states = self._initial_states(where, hx, source.shape[1], unbatched, dtype, meta)
        # (A parameter off the CPU is named by the op: its fake kernel refuses mixed devices.)
        inputs: dict[str, Any] = {"source": source, **parameters, **states,
                                  "mask": self._mask(where, mask, dtype, unbatched, meta)}
        outputs = _direct.call(self._cell, inputs, self._options)  # (training: if recorded)
        output, *final = (t.squeeze(1) for t in outputs) if unbatched else outputs
        state: State = (final[0], final[1]) if self._cell.has_cell else final[0]
        return output, state

    def _initial_states(self, where: str, hx: State | None, N: int, unbatched: bool,
                        dtype: torch.dtype, meta: bool) -> dict[str, torch.Tensor | None]:
        """torch.nn's ``hx``, checked, as the op's initState (initCell) in torch.nn's layout
        ``[D, N, H]`` (unbatched ``[D, H]``), which ``_direct.call`` takes (on meta when
        ``meta``)."""
        labels = ("initState", "initCell") if self._cell.has_cell else ("initState",)
        if hx is None:
            return dict.fromkeys(labels)
        names = ("hx[0]", "hx[1]") if self._cell.has_cell else ("hx",)
        if self._cell.has_cell:
            if not isinstance(hx, tuple | list) or len(hx) != 2:
                raise TypeError(f"{where}: hx: expected a tuple (h0, c0), got "
                                f"{type(hx).__name__}")
            given: tuple[Any, ...] = tuple(hx)
        else:
            given = (hx,)
        D, H = self.num_directions, self.hidden_size
        expected = [D, H] if unbatched else [D, N, H]
        for name, state in zip(names, given):
            check_tensor(f"{where}: {name}", state, dtype, meta)
            if list(state.shape) != expected:
                raise ValueError(f"{where}: {name}: expected shape {expected} ([D, N, H] for "
                                 f"time-major input), got {list(state.shape)}")
        return dict(zip(labels, given))

    def _mask(self, where: str, mask: torch.Tensor | None, dtype: torch.dtype,
              unbatched: bool, meta: bool) -> torch.Tensor | None:
        """The mask for the op: bool as 0/1 of the input's dtype; with unbatched input a
        ``[T, D·H]`` mask gets the N axis the input got (on meta when ``meta``)."""
        if mask is None:
            return None
        if not isinstance(mask, torch.Tensor):
            raise TypeError(f"{where}: mask: expected a torch.Tensor, got {type(mask).__name__}")
        if unbatched and mask.dim() == 2:
            mask = mask.unsqueeze(1)
        if mask.requires_grad and torch.is_grad_enabled():
            raise ValueError(f"{where}: mask: the mask is a constant and gets no gradient, but "
                             "it requires grad; pass mask.detach()")
        return check_tensor(f"{where}: mask", mask.to(dtype) if mask.dtype == torch.bool
                            else mask, dtype, meta)

    def extra_repr(self) -> str:
        parameters = [f"{self.input_size}, {self.hidden_size}"]
        if self.bias is None:
            parameters.append("bias=False")
        if getattr(self, "peephole", None) is not None:
            parameters.append("peephole=True")
        return ", ".join([*parameters, f"descriptor={self._descriptor!r}"])

    # --- conversion ------------------------------------------------------------------------

    @classmethod
    def from_torch(cls, module: nn.Module) -> Self:
        """The rnngraph twin of a single-layer, time-major ``torch.nn`` module, with its
        weights (see docs/pytorch.md for the mapping)."""
        return _convert.from_torch(cls, cls._cell, module)

    def to_torch(self) -> nn.Module:
        """The ``torch.nn`` twin of this module with its weights, where torch has one."""
        return _convert.to_torch(self, self._cell)


class SingleGateRNN(_RecurrentModule):
    """``torch.nn.RNN``'s twin: ``h[t] = act(x[t]·Wᵀ + b + (h[t−1] ⊙ m[t])·Rᵀ)``."""

    _cell = _cells.SINGLE_GATE

    def __init__(self, input_size: int | None, hidden_size: int, *, bias: bool = True,
                 descriptor: SingleGateRNNDescriptor | None = None,
                 dtype: torch.dtype | None = None, device: torch.device | str | None = None,
                 batch_first: bool = False) -> None:
        super().__init__(input_size, hidden_size, bias=bias, descriptor=descriptor, dtype=dtype,
                         device=device, batch_first=batch_first)


class LSTM(_RecurrentModule):
    """``torch.nn.LSTM``'s twin, with any gate activations, forgetGateLast and (with
    ``peephole=True``) Apple's peepholes on all four gates."""

    _cell = _cells.LSTM

    def __init__(self, input_size: int | None, hidden_size: int, *, bias: bool = True,
                 peephole: bool = False, descriptor: LSTMDescriptor | None = None,
                 dtype: torch.dtype | None = None, device: torch.device | str | None = None,
                 batch_first: bool = False) -> None:
        super().__init__(input_size, hidden_size, bias=bias, descriptor=descriptor, dtype=dtype,
                         device=device, batch_first=batch_first, peephole=peephole)


class GRU(_RecurrentModule):
    """``torch.nn.GRU``'s twin and more: reset gate before the product (MPSGraph's default)
    or after it (``resetAfter``, torch's form, with ``secondaryBias`` = torch's b_hn),
    flipZ, any gate activations."""

    _cell = _cells.GRU

    def __init__(self, input_size: int | None, hidden_size: int, *, bias: bool = True,
                 descriptor: GRUDescriptor | None = None, dtype: torch.dtype | None = None,
                 device: torch.device | str | None = None, batch_first: bool = False) -> None:
        super().__init__(input_size, hidden_size, bias=bias, descriptor=descriptor, dtype=dtype,
                         device=device, batch_first=batch_first)
