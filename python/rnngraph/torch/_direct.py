"""The modules' eager path: the same kernels and autograd formula as the registered ops
(rnngraph.torch._ops), called through one ``torch.autograd.Function`` instead of the
dispatcher (an inference call, which autograd does not record, calls the kernel alone).

A custom op's call crosses several Python layers (argument defaults, the autograd wrapper,
redispatch, the output alias check) on the way in and again for its gradient op. Right after
a long recurrent kernel those layers run from cold caches, and on a training row of
BENCHMARKS.md they cost about 0.3 ms per op (measured: benchmarks/results/torch-adapter-*).
The eager path skips them, and keeps its own Python to plain loops (one over the inputs,
one over the gradients; the shape checks are the ops', cached per signature of shapes): a
training step of row 8 runs 102 Python function calls outside the kernels (198 with a helper
chain per tensor), about 0.2 ms over the thinnest possible Function around the same kernels
(benchmarks/adapter_floor.py, results/adapter-floor-*). Anything else (torch.compile,
torch.export, fake or meta tensors, tensor subclasses, an active dispatch mode, torch.func's
transforms) goes through the ops, which those systems see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from rnngraph.dtypes import dense
from rnngraph.torch import _ops
from rnngraph.torch._arrays import check_tensor
from rnngraph.torch._states import to_op, to_torch

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from rnngraph.torch._cells import TorchCell


def eager(tensors: Sequence[torch.Tensor | None]) -> bool:
    """Whether a call on ``tensors`` may take the direct path: plain CPU tensors in eager
    mode, with no tracing system or dispatch mode that needs to see the op."""
    return _untraced() and _survey(tensors)[0]


def _jit_tracing() -> bool:
    """Whether torch.jit.trace is recording."""
    return torch._C._get_tracing_state() is not None


def _untraced() -> bool:
    """No tracing system (torch.compile, torch.jit.trace, which would record the kernel's
    result as a constant), dispatch mode or torch.func transform needs to see an op."""
    return not (torch.compiler.is_compiling() or _jit_tracing()
                or _get_current_dispatch_mode() is not None
                or torch._C._are_functorch_transforms_active())  # vmap, grad: their wrappers


def _survey(tensors: Sequence[torch.Tensor | None]) -> tuple[bool, bool]:
    """In one pass: whether all of ``tensors`` (None aside) are plain CPU tensors, and
    whether one requires grad."""
    plain, requires_grad = True, False
    for t in tensors:
        if t is not None:
            plain = plain and type(t) in _PLAIN and t.is_cpu
            requires_grad = requires_grad or t.requires_grad
    return plain, requires_grad


_PLAIN = (torch.Tensor, torch.nn.Parameter)  # not subclasses such as FakeTensor


def _kernel_arrays(cell: TorchCell, tensors: Sequence[torch.Tensor | None],
                   options: dict[str, Any]) -> tuple[dict[str, Any], tuple[int, int, int]]:
    """``tensors`` (in ``cell.forward_inputs`` order, plain CPU tensors as ``eager`` allows;
    initial states in torch.nn's layout ``[D, N, H]``) as NumPy views by label, the states
    in the op's layout ``[N, D·H]``, each dtype checked against the source's (another is
    named by its label); and D, N, H. ``_ops.forward_on_arrays`` checks the shapes and
    makes the arrays dense. One loop, no helper per tensor: this runs on every training step
    right after a kernel has filled the caches (module docstring)."""
    op, source = cell.spec.name, tensors[0]
    assert source is not None  # (forward_inputs starts with the source, then R)
    D, N, H = _sizes(source, tensors[1], options)
    arrays: dict[str, Any] = {}
    for label, tensor in zip(cell.forward_inputs, tensors):
        array = None
        if tensor is not None:
            if tensor.dtype != source.dtype or tensor.layout != torch.strided:
                check_tensor(f"{op}: {label}", tensor, source.dtype)  # raises, naming it
            array = tensor.numpy(force=True)
            if label in _STATES:
                array = _state_in_op_layout(array, D, N, H)
        arrays[label] = array
    return arrays, (D, N, H)


_STATES = ("initState", "initCell")  # the inputs in torch.nn's layout, as h_n's and c_n's


def _state_in_op_layout(state: Any, D: int, N: int, H: int) -> Any:
    """An initial state ``[D, N, H]`` in the op's layout ``[N, D·H]``; one whose H is not
    recurrentWeight's as it is, for the op's shape check to name recurrentWeight (a reshape
    would fail first, with NumPy's or torch's message)."""
    return to_op(state, D, N, H) if state.shape[-1] == H else state


def _infer(cell: TorchCell, tensors: Sequence[torch.Tensor | None],
           options: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    """An inference call of the forward kernel on ``tensors`` (``_kernel_arrays``), outside
    autograd: h and the final states ``[D, N, H]``."""
    arrays, _ = _kernel_arrays(cell, tensors, options)
    _, produced = _ops.forward_on_arrays(cell, arrays, options, training=False)
    return _as_tensors(produced, cell)


def _op_states(inputs: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """``inputs`` (tensors or NumPy arrays, by label) with the initial states in the op's
    layout ``[N, D·H]``."""
    D, N, H = _sizes(inputs["source"], inputs["recurrentWeight"], options)
    return {label: _state_in_op_layout(value, D, N, H)
            if label in _STATES and value is not None else value
            for label, value in inputs.items()}


def _sizes(source: Any, recurrent_weight: Any, options: dict[str, Any]) -> tuple[int, int, int]:
    """D, N and H of a call."""
    return 2 if options["bidirectional"] else 1, source.shape[1], recurrent_weight.shape[-1]


def _once_differentiable(op: str, gradients: tuple[Any, ...]) -> tuple[Any, ...]:
    """The backward's results under ``create_graph=True`` (grad mode on), made to raise if
    differentiated again (a second backward through them, e.g. a gradient penalty): the
    gradient kernel runs on NumPy arrays, so it records no graph, and its results must not
    pass for constants. (torch.autograd.function.once_differentiable marks them only when an
    incoming gradient requires grad, which ``autograd.grad(loss, x, create_graph=True)``'s
    does not.)"""
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
    recurrent product) is saved as a tensor over the kernel's array rather than becoming an
    output: the gradient kernel reads it as it was written, and autograd frees it after the
    backward with the inputs.
    So are the dense arrays the forward kernel read, which the backward passes to the gradient
    kernel once ``ctx.saved_tensors`` has checked that no input was modified in place since;
    their shapes were checked by the forward, and autograd gives the outputs' gradients the
    outputs' shapes and dtype. The fewer calls run between the two kernels, the less the
    adapter costs over a Graph (those calls run from caches the kernels just filled with
    their own data).

    Under saved-tensor hooks (``torch.autograd.graph.saved_tensors_hooks``: offloading,
    checkpointing) torch checks no version counter, as the hooks may keep copies: the
    backward then reads the inputs and h as the hooks give them back, not the arrays over
    the live tensors' memory (and what only the backward reads, as the hooks give it back)."""

    @staticmethod
    def forward(ctx: Any, cell: TorchCell, options: dict[str, Any],
                *tensors: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        arrays, sizes = _kernel_arrays(cell, tensors, options)
        read, produced = _ops.forward_on_arrays(cell, arrays, options, training=True,
                                                keep_product=True)  # (a resetAfter GRU's)
        outputs = _as_tensors(produced, cell)
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None, not zeros
        ctx.cell, ctx.options, ctx.sizes = cell, options, sizes
        # The arrays only the backward reads, and those the forward kernel read, are saved as
        # tensors over their memory (no copy), so that autograd frees them after the backward
        # as it frees the inputs (a graph kept alive, a loss kept in a list, would otherwise
        # keep them too: 30 steps of an LSTM held 796 MiB more).
        kept = {name: array for name, array in produced.items()
                if name not in ("h", *cell.final_states)}
        # Under saved-tensor hooks the backward reads what the hooks unpack (class docstring).
        hooked = torch._C._autograd._top_saved_tensors_default_hooks(False) is not None
        given = {} if hooked else read
        ctx.kept_names, ctx.read_names = list(kept), None if hooked else list(given)
        ctx.save_for_backward(*tensors, outputs[0], *_over(kept.values()),
                              *_over(given.values()))
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, ...]:
        _ops.refuse_batched_gradients(ctx.cell.spec.name, grads, "rnngraph.torch.")
        if not torch.is_grad_enabled():  # (autograd's backward runs without grad mode)
            return _Recurrent._gradients(ctx, *grads)
        with torch.no_grad():  # create_graph=True: the results are marked instead
            gradients = _Recurrent._gradients(ctx, *grads)
        return _once_differentiable(ctx.cell.spec.gradient_name, gradients)

    @staticmethod
    def _gradients(ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, ...]:
        cell, (D, N, H) = ctx.cell, ctx.sizes
        # (Reading them raises if one was modified in place since the forward, h too: the
        # kernel reads its array as outputFwd.)
        saved = ctx.saved_tensors
        count = len(cell.forward_inputs)
        tensors, h = saved[:count], saved[count]
        extra = (None if t is None else t.detach().numpy() for t in saved[count + 1:])
        produced: dict[str, Any] = {"h": h.detach().numpy(), **dict(zip(ctx.kept_names, extra))}
        inputs = None if ctx.read_names is None else dict(zip(ctx.read_names, extra))
        if inputs is None:  # saved-tensor hooks: the tensors they gave back
            arrays, _ = _kernel_arrays(cell, tensors, ctx.options)
            inputs = _ops.dense_inputs(cell, arrays, ctx.options)
            produced = {**produced, "h": dense(h.numpy(force=True))}
        # The outputs' gradients as the kernel takes them: dense (one may be strided, an
        # expanded sum's ones), the final states' in the op's layout. Autograd gives each the
        # shape and dtype of its output; an unused one is None (gradient_arguments gives the
        # kernel zeros for h's).
        by_output: dict[str, Any] = {}
        for name, g in zip(cell.differentiable_outputs, grads):
            array = None if g is None else g.numpy(force=True)
            by_output[name] = (array if array is None
                               else dense(array if name == "h" else to_op(array, D, N, H)))
        arguments = _ops.gradient_arguments(cell, inputs, produced, by_output,
                                            ctx.options["bidirectional"])
        gradients = _ops.gradient_on_arrays(cell, arguments, ctx.options)
        # Each input's gradient shaped like the input (the states' from the op's layout).
        results: list[torch.Tensor | None] = [None, None]  # (for cell and options)
        for label, tensor in zip(cell.forward_inputs, tensors):
            gradient = gradients.get(label)
            if gradient is None:
                results.append(None)
                continue
            if label in _STATES:
                gradient = to_torch(gradient, D, N, H)
            results.append(torch.from_numpy(gradient if gradient.shape == tensor.shape
                                             else gradient.reshape(tensor.shape)))
        return tuple(results)


def _over(arrays: Iterable[Any]) -> list[torch.Tensor | None]:
    """Tensors over ``arrays``' memory (None stays None), to save for the backward."""
    return [None if a is None else torch.from_numpy(a) for a in arrays]


def _as_tensors(produced: dict[str, Any], cell: TorchCell) -> tuple[torch.Tensor, ...]:
    """h and the final states ``[D, N, H]`` that the forward kernel ``produced``, as tensors
    over its arrays."""
    outputs = (produced["h"], *(produced[name] for name in cell.final_states))
    return tuple([torch.from_numpy(output) for output in outputs])


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
    _ops.refuse_forward_ad(cell.spec.name, "rnngraph.torch.")
    tensors = [inputs.get(label) for label in cell.forward_inputs]  # (None where absent)
    plain, requires_grad = _survey(tensors)
    recorded = requires_grad and torch.is_grad_enabled()  # (autograd records the call)
    if training is None:
        # A jit trace is one graph for both grad modes (torch.jit.trace's check traces again
        # under no_grad): it saves zState whenever the inputs require grad.
        training = requires_grad if _jit_tracing() else recorded
    if plain and _untraced():
        if training:
            outputs: tuple[torch.Tensor, ...]
            outputs = _Recurrent.apply(cell, options, *tensors)  # type: ignore[no-untyped-call]
            return outputs
        if not recorded:
            return _infer(cell, tensors, options)
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
