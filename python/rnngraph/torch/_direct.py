"""The modules' eager path: the same kernels and autograd formula as the registered ops
(rnngraph.torch._ops), called through one ``torch.autograd.Function`` instead of the
dispatcher (an inference call, which autograd does not record, calls the kernel alone).

A custom op's call crosses several Python layers (argument defaults, the autograd wrapper,
redispatch, the output alias check) on the way in and again for its gradient op. Right after
a long recurrent kernel those layers run from cold caches, and on a training row of
BENCHMARKS.md they cost about 0.3 ms per op (measured: benchmarks/results/torch-adapter-*).
The eager path skips them; anything else (torch.compile, torch.export, fake or meta tensors,
tensor subclasses, an active dispatch mode) goes through the ops, which those systems see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from rnngraph.torch import _ops
from rnngraph.torch._arrays import as_array, as_tensor

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rnngraph.torch._cells import TorchCell


def eager(tensors: Sequence[torch.Tensor | None]) -> bool:
    """Whether a call on ``tensors`` may take the direct path: plain CPU tensors in eager
    mode, with no tracing system or dispatch mode that needs to see the op."""
    if torch.compiler.is_compiling() or _get_current_dispatch_mode() is not None:
        return False
    return all(t is None or (type(t) in _PLAIN and t.device.type == "cpu") for t in tensors)


_PLAIN = (torch.Tensor, torch.nn.Parameter)  # not subclasses such as FakeTensor


def _array(where: str, value: Any, dtype: torch.dtype) -> Any:
    """A saved NumPy array as it is; a tensor as a NumPy view (None stays None)."""
    if value is None or isinstance(value, np.ndarray):
        return value
    return as_array(where, value, dtype)


def _forward(cell: TorchCell, tensors: Sequence[torch.Tensor | None], options: dict[str, Any],
             training: bool, inputs: dict[str, Any] | None = None,
             ) -> tuple[dict[str, Any], tuple[torch.Tensor, ...]]:
    """The forward kernel on ``tensors`` (in ``cell.forward_inputs`` order) and ``options``:
    all it produced (NumPy arrays, by output name), and h and the final states as tensors.
    ``inputs``, if given, receives the NumPy views of ``tensors`` that the kernel read."""
    bound = {**dict(zip(cell.forward_inputs, tensors)), **options,
             _ops.TRAINING[0]: training}
    produced = _ops.forward_arrays(cell, bound, inputs)
    return produced, tuple(as_tensor(produced[name]) for name in cell.differentiable_outputs)


class _Recurrent(torch.autograd.Function):
    """apply(cell, options, *the forward op's tensors in ``cell.forward_inputs`` order) -> h
    and the final states, recorded for autograd (a training forward: zState is saved).

    What only the backward reads (zState, the LSTM's cell sequence) stays a NumPy array kept
    on ``ctx`` rather than becoming an output: the gradient kernel reads it as it was written.
    So do the NumPy views of the inputs, which the backward passes to the gradient kernel
    once ``ctx.saved_tensors`` has checked that no input was modified in place since: the
    fewer torch calls run between the two kernels, the less the adapter costs over a Graph
    (those calls run from caches the kernels just filled with their own data)."""

    @staticmethod
    def forward(ctx: Any, cell: TorchCell, options: dict[str, Any],
                *tensors: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        inputs: dict[str, Any] = {}
        produced, outputs = _forward(cell, tensors, options, training=True, inputs=inputs)
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None, not zeros
        ctx.cell, ctx.options = cell, options  # (no tensors on ctx: NumPy arrays only)
        ctx.produced, ctx.inputs = produced, inputs
        ctx.save_for_backward(*tensors, outputs[0])
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, ...]:
        cell, options, produced = ctx.cell, ctx.options, ctx.produced
        h = ctx.saved_tensors[-1]  # (reading them raises if one was modified in place)
        # (An unused h's gradient is None: gradient_arguments gives the kernel zeros.)
        arguments = _ops.gradient_arguments(cell, ctx.inputs, produced,
                                            dict(zip(cell.differentiable_outputs, grads)),
                                            options["bidirectional"])
        op, dtype = cell.spec.gradient_name, h.dtype
        arrays = {label: _array(f"{op}: {label}", value, dtype)
                  for label, value in arguments.items()}
        gradients = _ops.gradient_arrays(cell, arrays, options)
        return (None, None, *(None if label not in gradients else as_tensor(gradients[label])
                              for label in cell.forward_inputs))


def _records(tensors: Sequence[torch.Tensor | None]) -> bool:
    """Whether autograd records a call on ``tensors``: grad mode on and one requires grad."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def call(cell: TorchCell, inputs: dict[str, torch.Tensor | None], options: dict[str, Any],
         training: bool | None = None) -> tuple[torch.Tensor, ...]:
    """The forward op on ``inputs`` (by label) and ``options`` (all of ``cell.options``, as
    ``cell.descriptor_options`` gives them): h and the final states (the op's outputs up to
    its saved ones). ``training``: whether the forward saves zState for a backward; None (the
    modules): whenever autograd records the call.

    When ``eager`` allows it, a training call goes through ``_Recurrent`` (recorded for
    autograd) and an inference call runs the kernel directly, outside autograd. Anything else
    goes through ``torch.ops.rnngraph.<op>``, and so does an inference call that autograd
    would record (``training=False`` with inputs that require grad): its backward refuses,
    as the op's does."""
    tensors = [inputs.get(label) for label in cell.forward_inputs]  # (None where absent)
    recorded = _records(tensors)
    training = recorded if training is None else training
    if eager(tensors):
        if training:
            outputs: tuple[torch.Tensor, ...]
            outputs = _Recurrent.apply(cell, options, *tensors)  # type: ignore[no-untyped-call]
            return outputs
        if not recorded:
            return _forward(cell, tensors, options, training=False)[1]
    op = getattr(getattr(torch.ops, _ops.NAMESPACE), cell.op)
    return op(**inputs, **options, training=training)  # type: ignore[no-any-return]
