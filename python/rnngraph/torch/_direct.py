"""The modules' eager path: the same kernels and autograd formula as the registered ops
(rnngraph.torch._ops), called through one ``torch.autograd.Function`` instead of the
dispatcher.

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


class _Recurrent(torch.autograd.Function):
    """apply(cell, *arguments in the op's order) -> h and the final states.

    What only the backward reads (zState, the LSTM's cell sequence) stays a NumPy array kept
    on ``ctx`` rather than becoming an output: the gradient kernel reads it as it was written."""

    @staticmethod
    def forward(ctx: Any, cell: TorchCell, *arguments: Any) -> tuple[torch.Tensor, ...]:
        names, defaults = _ops.names_and_defaults(cell, cell.forward_inputs, training=True)
        bound = _ops._bind(names, defaults, arguments, {})
        _ops.check_mask(cell, bound["mask"])
        produced = _ops.forward_arrays(cell, bound)
        outputs = tuple(as_tensor(produced[name]) for name in ("h", *cell.final_states))
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None, not zeros
        ctx.cell, ctx.produced, ctx.training = cell, produced, bound[_ops.TRAINING[0]]
        ctx.options = {name: bound[name] for name, _ in cell.options}  # (no tensors on ctx)
        ctx.save_for_backward(*(bound[label] for label in cell.forward_inputs), outputs[0])
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, ...]:
        cell, options = ctx.cell, ctx.options
        _ops.check_training(cell, ctx.training)
        *saved, h = ctx.saved_tensors
        inputs = dict(zip(cell.forward_inputs, saved))
        outputs = {**ctx.produced, "h": h}
        arguments = _ops.gradient_arguments(cell, inputs, outputs,
                                            dict(zip(("h", *cell.final_states), grads)),
                                            options["bidirectional"])
        op, dtype = cell.spec.gradient_name, h.dtype
        arrays = {label: _array(f"{op}: {label}", value, dtype)
                  for label, value in arguments.items()}
        gradients = _ops.gradient_arrays(cell, arrays, options)
        return (None, *(None if label not in gradients else as_tensor(gradients[label])
                        for label in cell.forward_inputs),
                *(None for _ in range(len(cell.options) + 1)))


def call(cell: TorchCell, inputs: dict[str, torch.Tensor | None], options: dict[str, Any],
         training: bool) -> tuple[torch.Tensor, ...]:
    """The forward op on ``inputs`` (by label) and ``options``: h and the final states (the
    op's outputs up to its saved ones), through the direct path when ``eager`` allows it,
    else through ``torch.ops.rnngraph.<op>``."""
    if eager(list(inputs.values())):
        arguments = {**inputs, **options, _ops.TRAINING[0]: training}
        names, defaults = _ops.names_and_defaults(cell, cell.forward_inputs, training=True)
        outputs: tuple[torch.Tensor, ...] = _Recurrent.apply(  # type: ignore[no-untyped-call]
            cell, *(arguments.get(name, defaults[name]) for name in names))
        return outputs
    op = getattr(getattr(torch.ops, _ops.NAMESPACE), cell.op)
    return op(**inputs, **options, training=training)  # type: ignore[no-any-return]
