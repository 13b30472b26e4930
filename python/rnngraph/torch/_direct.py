"""The modules' eager path: the same kernels and autograd formula as the registered ops
(rnngraph.torch._ops), called through one ``torch.autograd.Function`` instead of the
dispatcher (an inference call, which autograd does not record, calls the kernel alone).

A custom op's call crosses several Python layers (argument defaults, the autograd wrapper,
redispatch, the output alias check) on the way in and again for its gradient op. Right after
a long recurrent kernel those layers run from cold caches, and on a training row of
BENCHMARKS.md they cost about 0.3 ms per op (measured: benchmarks/results/torch-adapter-*).
The eager path skips them; anything else (torch.compile, torch.export, fake or meta tensors,
tensor subclasses, an active dispatch mode, torch.func's transforms) goes through the ops,
which those systems see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from rnngraph.dtypes import dense
from rnngraph.torch import _ops
from rnngraph.torch._arrays import as_array, as_tensor
from rnngraph.torch._states import to_op, to_torch

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rnngraph.torch._cells import TorchCell


def eager(tensors: Sequence[torch.Tensor | None]) -> bool:
    """Whether a call on ``tensors`` may take the direct path: plain CPU tensors in eager
    mode, with no tracing system or dispatch mode that needs to see the op."""
    if (torch.compiler.is_compiling() or _get_current_dispatch_mode() is not None
            or torch._C._are_functorch_transforms_active()):  # vmap, grad: their wrappers
        return False
    return all(t is None or (type(t) in _PLAIN and t.is_cpu) for t in tensors)


_PLAIN = (torch.Tensor, torch.nn.Parameter)  # not subclasses such as FakeTensor


def _array(where: str, value: Any, dtype: torch.dtype) -> Any:
    """A saved NumPy array as it is; a tensor as a NumPy view (None stays None)."""
    if value is None or isinstance(value, np.ndarray):
        return value
    return as_array(where, value, dtype)


def _forward(cell: TorchCell, tensors: Sequence[torch.Tensor | None], options: dict[str, Any],
             training: bool) -> tuple[dict[str, Any], dict[str, Any], tuple[torch.Tensor, ...]]:
    """The forward kernel on ``tensors`` (in ``cell.forward_inputs`` order, initial states
    in torch.nn's layout ``[D, N, H]``) and ``options``: the dense NumPy arrays the kernel
    read (by label, states in the op's layout), all it produced (by output name), and h and
    the final states ``[D, N, H]`` as tensors."""
    op, dtype = cell.spec.name, _source(tensors).dtype
    arrays = {label: _array(f"{op}: {label}", t, dtype)
              for label, t in zip(cell.forward_inputs, tensors)}
    read, produced = _ops.forward_on_arrays(cell, _op_states(arrays, options), options,
                                            training, keep_product=training)
    outputs = (produced["h"], *(produced[name] for name in cell.final_states))
    return read, produced, tuple(map(as_tensor, outputs))


_STATES = ("initState", "initCell")  # the inputs in torch.nn's layout, as h_n's and c_n's


def _op_states(inputs: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """``inputs`` (tensors or NumPy arrays, by label) with the initial states in the op's
    layout ``[N, D·H]``."""
    D, N, H = _sizes(inputs["source"], inputs["recurrentWeight"], options)
    return {label: to_op(value, D, N, H) if label in _STATES and value is not None else value
            for label, value in inputs.items()}


def _source(tensors: Sequence[torch.Tensor | None]) -> torch.Tensor:
    """The source, the first of the forward op's inputs (the module has checked it)."""
    source = tensors[0]
    assert source is not None
    return source


def _sizes(source: Any, recurrent_weight: Any, options: dict[str, Any]) -> tuple[int, int, int]:
    """D, N and H of a call."""
    return 2 if options["bidirectional"] else 1, source.shape[1], recurrent_weight.shape[-1]


def _once_differentiable(op: str, gradients: tuple[Any, ...]) -> tuple[Any, ...]:
    """The backward's results, made to raise if differentiated again (``create_graph=True``
    and a second backward through them, e.g. a gradient penalty): the gradient kernel runs on
    NumPy arrays, so it records no graph, and its results must not pass for constants.
    (torch.autograd.function.once_differentiable marks them only when an incoming gradient
    requires grad, which ``autograd.grad(loss, x, create_graph=True)``'s does not.)"""
    if not torch.is_grad_enabled():
        return gradients
    tensors = [i for i, g in enumerate(gradients) if isinstance(g, torch.Tensor)]
    error = torch._C._functions.DelayedError(
        f"{op}: rnngraph's gradient kernels cannot be differentiated again (double backward); "
        "use torch.nn's RNN modules for a gradient penalty", len(tensors))
    marked = error(*[gradients[i].detach().requires_grad_() for i in tensors])
    marked = marked if isinstance(marked, tuple) else (marked,)
    out = list(gradients)
    for i, g in zip(tensors, marked):
        out[i] = g
    return tuple(out)


class _Recurrent(torch.autograd.Function):
    """apply(cell, options, *the forward op's tensors in ``cell.forward_inputs`` order) -> h
    and the final states, recorded for autograd (a training forward: zState is saved). The
    initial and final states, and their gradients, are in torch.nn's layout ``[D, N, H]``:
    converted inside, in NumPy, they cost no autograd node.

    What only the backward reads (zState, the LSTM's cell sequence, a resetAfter GRU's kept
    recurrent product) stays a NumPy array kept on ``ctx`` rather than becoming an output:
    the gradient kernel reads it as it was written.
    So do the dense arrays the forward kernel read, which the backward passes to the gradient
    kernel once ``ctx.saved_tensors`` has checked that no input was modified in place since;
    their shapes were checked by the forward, and autograd gives the outputs' gradients the
    outputs' shapes and dtype. The fewer calls run between the two kernels, the less the
    adapter costs over a Graph (those calls run from caches the kernels just filled with
    their own data)."""

    @staticmethod
    def forward(ctx: Any, cell: TorchCell, options: dict[str, Any],
                *tensors: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        read, produced, outputs = _forward(cell, tensors, options, training=True)
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None, not zeros
        ctx.cell, ctx.options = cell, options  # (no tensors on ctx: NumPy arrays only)
        ctx.produced, ctx.inputs = produced, read
        ctx.save_for_backward(*tensors, outputs[0])
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, ...]:
        with torch.no_grad():
            gradients = _Recurrent._gradients(ctx, *grads)
        return _once_differentiable(ctx.cell.spec.gradient_name, gradients)

    @staticmethod
    def _gradients(ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, ...]:
        cell, options, inputs = ctx.cell, ctx.options, ctx.inputs
        *tensors, h = ctx.saved_tensors  # (reading them raises if one was modified in place)
        op, dtype = cell.spec.gradient_name, h.dtype
        D, N, H = _sizes(inputs["source"], inputs["recurrentWeight"], options)

        def output_gradient(name: str, g: torch.Tensor) -> Any:
            """The kernel's argument for an output's gradient, dense (it may be strided:
            an expanded sum's ones)."""
            array = _array(f"{op}: {name}", g, dtype)
            return dense(array if name == "h" else to_op(array, D, N, H))

        # (An unused h's gradient is None: gradient_arguments gives the kernel zeros.)
        by_output = {name: None if g is None else output_gradient(name, g)
                     for name, g in zip(cell.differentiable_outputs, grads)}
        arguments = _ops.gradient_arguments(cell, inputs, ctx.produced, by_output,
                                            options["bidirectional"])
        gradients = _ops.gradient_on_arrays(cell, arguments, options)
        return (None, None, *(None if label not in gradients
                              else as_tensor(_input_layout(label, gradients[label], t.shape,
                                                           D, N, H))
                              for label, t in zip(cell.forward_inputs, tensors)))


def _input_layout(label: str, gradient: Any, shape: torch.Size, D: int, N: int,
                  H: int) -> Any:
    """An input's gradient from the kernel (op layout) shaped like the input."""
    return (to_torch(gradient, D, N, H) if label in _STATES else gradient).reshape(shape)


def _records(tensors: Sequence[torch.Tensor | None]) -> bool:
    """Whether autograd records a call on ``tensors``: grad mode on and one requires grad."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def call(cell: TorchCell, inputs: dict[str, torch.Tensor | None], options: dict[str, Any],
         training: bool | None = None) -> tuple[torch.Tensor, ...]:
    """The forward op on ``inputs`` (by label; the initial states in torch.nn's layout
    ``[D, N, H]``, or ``[D, H]`` with N = 1) and ``options`` (all of ``cell.options``, as
    ``cell.descriptor_options`` gives them): h and the final states ``[D, N, H]``.
    ``training``: whether the forward saves zState for a backward; None (the modules):
    whenever autograd records the call.

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
            return _forward(cell, tensors, options, training=False)[2]
    if recorded and torch._C._are_functorch_transforms_active():
        # torch's custom-op autograd has no torch.func support: say so, and what works
        raise RuntimeError(f"rnngraph.torch.{cell.spec.name}: torch.func transforms (vmap, "
                           "grad, jacrev) run rnngraph's ops only outside autograd: call it "
                           "under torch.no_grad() (or on tensors that do not require grad), "
                           "or loop over the mapped dimension for gradients")
    op = getattr(getattr(torch.ops, _ops.NAMESPACE), cell.op)
    outputs = op(**_op_states(inputs, options), **options, training=training)
    D, N, H = _sizes(inputs["source"], inputs["recurrentWeight"], options)
    count = len(cell.differentiable_outputs)
    return (outputs[0], *(to_torch(state, D, N, H) for state in outputs[1:count]))
