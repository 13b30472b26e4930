"""``torch.ops.rnngraph.{single_gate_rnn, lstm, gru}`` and their gradient ops
``..._gradients``, registered with ``torch.library.custom_op``, with fake (meta) kernels for
``torch.compile``/``torch.export`` and an autograd formula.

The ops speak rnngraph's language: arguments named after the Swift labels, in SPEC.md's
layouts (section 1), and the descriptor's options as flags and activation values. The
forward op returns h ``[T, N, D·H]``, each direction's final state ``state`` ``[N, D·H]``
(the LSTM also ``cell``), then what its gradient op reads (the LSTM's cell sequence, and
zState). Its backward calls the gradient op on those saved tensors, as MPSGraph's gradient
ops consume the forward op's outputs: the forward pass never runs twice.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.autograd.forward_ad as _forward_ad

from rnngraph._native import core as _core
from rnngraph.ops.layouts import infer_sizes, normalise
from rnngraph.torch._arrays import as_array, as_tensor, check_kind, check_tensor
from rnngraph.torch._cells import CELLS, TorchCell
from rnngraph.torch._states import to_op
from rnngraph.torch._threads import follow_torch
from rnngraph.torch._vmap import per_element_rule

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import NDArray

    from rnngraph._typing import CoreOptions

NAMESPACE = "rnngraph"
TRAINING = ("training", True)  # the forward op's last argument: save zState for backward


# --- schemas and arguments ---------------------------------------------------------------

def _option_arguments(cell: TorchCell) -> list[str]:
    return [f"{'bool' if isinstance(default, bool) else 'int'} {name}={default}"
            for name, default in cell.options]


def _schema(cell: TorchCell, tensors: tuple[str, ...], last: list[str], returns: str) -> str:
    arguments = [f"Tensor {label}" if label in cell.required else f"Tensor? {label}=None"
                 for label in tensors]
    return f"({', '.join([*arguments, *_option_arguments(cell), *last])}) -> {returns}"


def forward_schema(cell: TorchCell) -> str:
    outputs = f"({', '.join('Tensor' for _ in cell.outputs)})"
    return _schema(cell, cell.forward_inputs, [f"bool {TRAINING[0]}={TRAINING[1]}"], outputs)


def gradient_schema(cell: TorchCell) -> str:
    return _schema(cell, cell.gradient_inputs, [], "Tensor[]")


def _bind(names: Sequence[str], defaults: dict[str, Any], args: Sequence[Any],
          kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments by name (the dispatcher passes them positionally or by name)."""
    bound = dict(defaults)
    bound.update(zip(names, args))
    bound.update(kwargs)
    return bound


def names_and_defaults(cell: TorchCell, tensors: tuple[str, ...],
                       training: bool) -> tuple[list[str], dict[str, Any]]:
    """An op's argument names in schema order and their defaults (made once per op when it is
    registered, then shared by its calls: not to be changed)."""
    defaults: dict[str, Any] = {label: None for label in tensors}
    defaults.update(cell.options)
    if training:
        defaults[TRAINING[0]] = TRAINING[1]
    return list(defaults), defaults


def core_options(cell: TorchCell, bound: dict[str, Any]) -> CoreOptions:
    """The core's options object for the options in ``bound`` (made once per combination)."""
    return _core_options(cell, tuple([(name, bound[name]) for name, _ in cell.options]))


@functools.lru_cache(maxsize=512)
def _core_options(cell: TorchCell, options: tuple[tuple[str, Any], ...]) -> CoreOptions:
    return cell.spec.options_type(**dict(options))


def _check_required(cell: TorchCell, op: str, labels: tuple[str, ...],
                    bound: dict[str, Any]) -> None:
    """A tensor the schema requires, passed as None (the dispatcher lets None through for a
    ``Tensor`` argument), is refused by name."""
    for label in labels:
        if bound[label] is None and label in cell.required:
            raise TypeError(f"{op}: {label} is required: expected a tensor, got None")


def _arrays(cell: TorchCell, op: str, labels: tuple[str, ...],
            bound: dict[str, Any]) -> dict[str, Any]:
    """The tensors of ``labels`` as NumPy views (None where absent), one dtype for all."""
    _check_required(cell, op, labels, bound)
    dtype = check_tensor(f"{op}: source", bound["source"]).dtype
    return {label: None if bound[label] is None else as_array(f"{op}: {label}", bound[label],
                                                                dtype)
            for label in labels}


def refuse_forward_ad(op: str, prefix: str = "") -> None:
    """Forward-mode AD (torch.func.jvp, jacfwd, torch.autograd.forward_ad's dual tensors) is
    refused while a dual level is open: rnngraph's ops have no forward-mode formula, and
    torch would drop the tangents of a custom op without one, returning zeros. (Inside the
    kernel, torch.func.jvp's inputs no longer show their tangents, so the open level is
    what tells.) ``prefix`` goes before ``op`` in the message (made only when it raises)."""
    if _forward_ad._current_level >= 0:
        raise RuntimeError(f"{prefix}{op}: forward-mode AD (torch.func.jvp, jacfwd, "
                           "torch.autograd.forward_ad) is not supported: rnngraph's ops have "
                           "no forward-mode formula; use reverse mode (backward, "
                           "torch.autograd.grad)")


def refuse_batched_gradients(op: str, grads: Sequence[torch.Tensor | None],
                             prefix: str = "") -> None:
    """Batched cotangents (``torch.autograd.grad(is_grads_batched=True)``,
    ``jacobian(vectorize=True)``: autograd's own vmap of the backward) are refused by name:
    the backward kernel takes one cotangent per output, and torch's message would name only
    its internal op. ``prefix`` as in ``refuse_forward_ad``."""
    if any(g is not None and torch._C._functorch.is_legacy_batchedtensor(g) for g in grads):
        raise RuntimeError(f"{prefix}{op}: batched gradients (autograd.grad(is_grads_batched="
                           "True), jacobian(vectorize=True)) are not supported: the backward "
                           "kernel takes one cotangent; loop over them, or use "
                           "jacobian(vectorize=False)")


# --- kernels -------------------------------------------------------------------------------

def forward_on_arrays(cell: TorchCell, arrays: dict[str, Any], bound: dict[str, Any],
                      training: bool,
                      keep_product: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """The forward kernel on ``arrays`` (NumPy, by label; states in the op's layout) and the
    options in ``bound``, once their shapes are checked: the dense arrays it read (by
    label), and what it produced, as the core wrote it: h, the LSTM's cellSequence, zState
    (empty when not training), and the final states ``state`` (the LSTM's ``cell`` too) in
    torch.nn's layout ``[D, N, H]`` (SPEC.md section 4: each direction's last processed
    step). ``keep_product``: a training resetAfter GRU also keeps ``recurrentProduct`` for
    its gradient kernel (hm·R_oᵀ + b2 of every step, which it then need not compute)."""
    dense = dense_inputs(cell, arrays, bound)
    follow_torch()
    result: tuple[Any, ...] = _core.rnn_forward(core_options(cell, bound), dense,
                                                training=training,
                                                final_states=True,
                                                recurrent_product=keep_product)
    h, c, z, h_n, c_n, *kept = result  # (kept: [recurrentProduct or None] when asked for)
    produced = {"h": h, "cellSequence": c, "state": h_n,
                "zState": np.empty(0, h.dtype) if z is None else z}
    if c_n is not None:
        produced["cell"] = c_n
    if kept and kept[0] is not None:
        produced["recurrentProduct"] = kept[0]
    return dense, produced


def dense_inputs(cell: TorchCell, arrays: dict[str, Any], bound: dict[str, Any]) -> dict[str, Any]:
    """The forward op's ``arrays`` (NumPy, by label; states in the op's layout), their shapes
    checked, made dense in the layouts the core reads (SPEC.md section 1)."""
    op = cell.spec.name
    sizes = infer_sizes(op, cell.spec, arrays, bound["bidirectional"])
    return normalise(op, arrays, sizes, bound["bidirectional"])


def forward_arrays(cell: TorchCell, bound: dict[str, Any]) -> dict[str, NDArray[Any]]:
    """The forward op on ``bound`` (tensors by label, options): its outputs by name, as the
    arrays the core wrote; the final states in the op's layout ``[N, D·H]``."""
    arrays = _arrays(cell, cell.spec.name, cell.forward_inputs, bound)
    produced = forward_on_arrays(cell, arrays, bound, bound["training"])[1]
    D, N, H = produced["state"].shape
    for name in cell.final_states:
        produced[name] = to_op(produced[name], D, N, H)
    return produced


def forward_kernel(cell: TorchCell, bound: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    refuse_forward_ad(cell.spec.name)
    produced = forward_arrays(cell, bound)
    return tuple(as_tensor(produced[name]) for name in cell.outputs)


def _returned(cell: TorchCell, given: dict[str, Any]) -> list[str]:
    """The gradient op's outputs: one per given differentiable input (SPEC.md section 6)."""
    return [label for label in cell.spec.returned if given.get(label) is not None]


def gradient_arrays(cell: TorchCell, arrays: dict[str, Any],
                    bound: dict[str, Any]) -> dict[str, NDArray[Any]]:
    """The gradient op on ``arrays`` (NumPy, by label) and the options in ``bound``: one
    gradient per given differentiable input, by label, shaped like it."""
    op = cell.spec.gradient_name
    bidirectional = bound["bidirectional"]
    sizes = infer_sizes(op, cell.spec, arrays, bidirectional)
    dense = normalise(op, arrays, sizes, bidirectional)
    grads = gradient_on_arrays(cell, dense, bound)
    return {label: grads[label].reshape(arrays[label].shape) for label in _returned(cell, arrays)}


def gradient_on_arrays(cell: TorchCell, dense: dict[str, Any],
                       bound: dict[str, Any]) -> dict[str, NDArray[Any]]:
    """The gradient kernel on ``dense`` (dense NumPy arrays in the op's layouts, by label;
    the core checks their shapes) and the options in ``bound``: the gradients by label, in
    the op's layouts."""
    follow_torch()
    return _core.rnn_gradients(core_options(cell, bound), dense)


def gradient_kernel(cell: TorchCell, bound: dict[str, Any]) -> list[torch.Tensor]:
    refuse_forward_ad(cell.spec.gradient_name)
    arrays = _arrays(cell, cell.spec.gradient_name, cell.gradient_inputs, bound)
    return [as_tensor(g) for g in gradient_arrays(cell, arrays, bound).values()]


# --- fake kernels (shapes only) --------------------------------------------------------------

def _same_device(op: str, labels: tuple[str, ...], bound: dict[str, Any]) -> None:
    """The fake kernel also serves meta tensors, where all tensors on one device is fine (shape
    inference); a mix of devices fails as the CPU kernel would, naming the first tensor that
    is not on the CPU."""
    tensors = {label: bound[label] for label in labels if bound[label] is not None}
    if len({t.device for t in tensors.values()}) > 1:
        label, odd = next((k, t) for k, t in tensors.items() if t.device.type != "cpu")
        raise ValueError(f"{op}: {label}: expected a CPU tensor like the other inputs, got one "
                         f"on device {odd.device} (rnngraph computes on the CPU)")


def _fake_checks(cell: TorchCell, op: str, labels: tuple[str, ...],
                 bound: dict[str, Any]) -> None:
    """What the CPU kernel refuses before it computes, refused by the fake kernel too (so
    torch.compile and torch.export fail at the op, naming the argument, not downstream):
    devices, dtypes, and the shapes wherever every size is a plain int (a dynamic shape's
    symbolic sizes are left to the kernel)."""
    _check_required(cell, op, labels, bound)
    _same_device(op, labels, bound)
    tensors = {label: bound[label] for label in labels if bound[label] is not None}
    dtype = check_kind(f"{op}: source", bound["source"]).dtype
    for label, tensor in tensors.items():
        check_kind(f"{op}: {label}", tensor, dtype)
    if all(type(size) is int for tensor in tensors.values() for size in tensor.shape):
        infer_sizes(op, cell.spec, tensors, bound["bidirectional"])


def forward_fake(cell: TorchCell, bound: dict[str, Any]) -> tuple[torch.Tensor, ...]:
    _fake_checks(cell, cell.spec.name, cell.forward_inputs, bound)
    source, weight = bound["source"], bound["recurrentWeight"]
    if source.dim() != 3:
        raise ValueError(f"{cell.spec.name}: source: expected rank 3 [T, N, I], "
                         f"got shape {list(source.shape)}")
    T, N, H = source.shape[0], source.shape[1], weight.shape[-1]
    D = 2 if bound["bidirectional"] else 1
    shapes = {"h": (T, N, D * H), "state": (N, D * H), "cell": (N, D * H),
              "cellSequence": (T, N, D * H),
              "zState": (T, N, D * cell.spec.gates * H) if bound["training"] else (0,)}
    return tuple(source.new_empty(shapes[name]) for name in cell.outputs)


def gradient_fake(cell: TorchCell, bound: dict[str, Any]) -> list[torch.Tensor]:
    _fake_checks(cell, cell.spec.gradient_name, cell.gradient_inputs, bound)
    given = {label: bound[label] for label in cell.gradient_inputs}
    return [given[label].new_empty(given[label].shape) for label in _returned(cell, given)]


# --- autograd ------------------------------------------------------------------------------

def check_mask(cell: TorchCell, mask: torch.Tensor | None) -> None:
    if mask is not None and mask.requires_grad:
        raise ValueError(f"rnngraph.{cell.op}: mask: the mask is a constant and gets no "
                         "gradient, but it requires grad; pass mask.detach()")


def _setup_context(cell: TorchCell, names: list[str], defaults: dict[str, Any], ctx: Any,
                   inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
    bound = _bind(names, defaults, inputs, {})
    check_mask(cell, bound["mask"])
    outputs = dict(zip(cell.outputs, output))
    ctx.set_materialize_grads(False)  # an unused output's gradient stays None, not zeros
    saved = cell.saved_outputs.values()
    ctx.mark_non_differentiable(*(outputs[name] for name in saved if name != "h"))
    ctx.bound_options = {name: bound[name] for name, _ in cell.options}
    ctx.training = bound[TRAINING[0]]
    ctx.save_for_backward(*(bound[label] for label in cell.forward_inputs),
                          *(outputs[name] for name in saved))


def check_training(cell: TorchCell, training: bool) -> None:
    if not training:
        raise RuntimeError(f"rnngraph.{cell.op}: backward needs the forward op called with "
                           "training=True (it saves zState for the gradient op)")


def gradient_arguments(cell: TorchCell, inputs: dict[str, Any], outputs: dict[str, Any],
                       grad: dict[str, Any],
                       bidirectional: bool) -> dict[str, Any]:
    """The gradient op's arguments by label: the forward op's ``inputs``, its saved
    ``outputs`` (by output name) and the gradients ``grad`` of its outputs (by name; None
    where unused), and a resetAfter GRU's kept ``recurrentProduct`` when the outputs hold one
    (the eager path's). Inputs and outputs may be tensors or NumPy arrays."""
    sequence_gradient: Any = grad["h"]
    if sequence_gradient is None:  # the sequence unused (only the final states): dL/dh = 0
        source, weight = inputs["source"], inputs["recurrentWeight"]
        D = 2 if bidirectional else 1
        shape = (source.shape[0], source.shape[1], D * weight.shape[-1])
        sequence_gradient = (np.zeros(shape, source.dtype) if isinstance(source, np.ndarray)
                             else source.new_zeros(shape))
    from_output = {"sourceGradient": sequence_gradient, "stateGradient": grad.get("state"),
                   "cellGradient": grad.get("cell")}
    saved = cell.saved_outputs
    arguments = {label: from_output[label] if label in from_output
                 else outputs[saved[label]] if label in saved
                 else inputs[label]
                 for label in cell.gradient_inputs}
    if "recurrentProduct" in outputs:  # a resetAfter GRU's, kept by the eager forward
        arguments["recurrentProduct"] = outputs["recurrentProduct"]
    return arguments


def _gradient_op(cell: TorchCell, arguments: dict[str, Any]) -> Sequence[torch.Tensor]:
    """The registered gradient op (what autograd through ``torch.ops.rnngraph`` calls)."""
    gradient_op = getattr(getattr(torch.ops, NAMESPACE), f"{cell.op}_gradients")
    return gradient_op(**arguments)  # type: ignore[no-any-return]


def _backward(cell: TorchCell, ctx: Any, *grads: torch.Tensor | None) -> tuple[Any, ...]:
    check_training(cell, ctx.training)
    refuse_batched_gradients(cell.spec.name, grads)
    saved = ctx.saved_tensors
    count = len(cell.forward_inputs)
    inputs = dict(zip(cell.forward_inputs, saved[:count]))
    outputs = dict(zip(cell.saved_outputs.values(), saved[count:]))
    arguments = gradient_arguments(cell, inputs, outputs, dict(zip(cell.outputs, grads)),
                                   ctx.bound_options["bidirectional"])
    results = _gradient_op(cell, {**arguments, **ctx.bound_options})
    by_label = dict(zip(_returned(cell, inputs), results))
    return (*(by_label.get(label) for label in cell.forward_inputs),
            *(None for _ in range(len(cell.options) + 1)))


# --- registration --------------------------------------------------------------------------

def _register(cell: TorchCell) -> None:
    names, defaults = names_and_defaults(cell, cell.forward_inputs, training=True)
    gradient_names, gradient_defaults = names_and_defaults(cell, cell.gradient_inputs,
                                                            training=False)

    def forward(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, ...]:
        return forward_kernel(cell, _bind(names, defaults, args, kwargs))

    def forward_meta(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, ...]:
        return forward_fake(cell, _bind(names, defaults, args, kwargs))

    def gradients(*args: Any, **kwargs: Any) -> list[torch.Tensor]:
        return gradient_kernel(cell, _bind(gradient_names, gradient_defaults, args, kwargs))

    def gradients_meta(*args: Any, **kwargs: Any) -> list[torch.Tensor]:
        return gradient_fake(cell, _bind(gradient_names, gradient_defaults, args, kwargs))

    forward_op = torch.library.custom_op(f"{NAMESPACE}::{cell.op}", forward, mutates_args=(),
                                         device_types="cpu", schema=forward_schema(cell))
    forward_op.register_fake(forward_meta)
    forward_op.register_autograd(functools.partial(_backward, cell),
                                 setup_context=functools.partial(_setup_context, cell, names,
                                                                 defaults))
    gradient_op = torch.library.custom_op(f"{NAMESPACE}::{cell.op}_gradients", gradients,
                                          mutates_args=(), device_types="cpu",
                                          schema=gradient_schema(cell))
    gradient_op.register_fake(gradients_meta)
    for op, name in ((forward_op, cell.spec.name), (gradient_op, cell.spec.gradient_name)):
        torch.library.register_vmap(op, per_element_rule(op, name))
    _refuse_other_layouts(cell.op, cell.spec.name, names, defaults)
    _refuse_other_layouts(f"{cell.op}_gradients", cell.spec.gradient_name, gradient_names,
                          gradient_defaults)


# Dispatch keys of CPU tensors that are not dense and strided: the dispatcher would answer
# them with NotImplementedError ("Could not run 'rnngraph::lstm' with arguments from the
# 'SparseCPU' backend"); these kernels raise check_kind's TypeError, as the modules do,
# naming the argument.
_OTHER_LAYOUTS = ("SparseCPU", "SparseCsrCPU", "NestedTensorCPU", "MkldnnCPU", "QuantizedCPU")
_library = torch.library.Library(NAMESPACE, "FRAGMENT")  # type: ignore[no-untyped-call]


def _refuse_other_layouts(op: str, name: str, names: list[str], defaults: dict[str, Any]) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        for label, value in _bind(names, defaults, args, kwargs).items():
            if isinstance(value, torch.Tensor):
                check_kind(f"{name}: {label}", value)  # raises for the one not dense
        raise TypeError(f"{name}: expected dense (strided) CPU tensors")

    for key in _OTHER_LAYOUTS:
        _library.impl(op, refuse, key)  # type: ignore[no-untyped-call]

for _cell in CELLS:
    _register(_cell)
