"""What the three RNN op families share: argument checking, shape inference at build time
and again at run time, layout normalisation for the core, and the returned-gradient order.

Each cell is described by a ``CellSpec``; the per-cell modules only add the public methods
(with their docstrings) and the cell's output list.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph._native import core as _core
from rnngraph.dtypes import DataType, default_data_type, loses_precision
from rnngraph.ops.forward_matching import (
    check_forward_outputs,
    check_matching_forward,
    kept_product,
    warn_unmatched_inputs,
)
from rnngraph.ops.layouts import fully_known, infer_sizes, normalise, unsettled, whole_mask
from rnngraph.tensor import Tensor

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from numpy.typing import NDArray

    from rnngraph._core import PackedWeights, PreparedForward
    from rnngraph._typing import Compute, CoreOptions, GraphBuilder, RunArrays
    from rnngraph.descriptors import _Descriptor

    # An op's arguments by Swift label, as given (arrays become constants) or as recorded.
    Arguments = Mapping[str, Tensor | NDArray[Any] | None]
    # The arguments once checked (arrays not yet converted: their shapes are checked first).
    Checked = dict[str, Tensor | NDArray[Any] | None]


class PreparedCall:
    """A forward op's core call prepared at its first run (an op whose shapes are all known
    when built; ``prepared`` None until then). ``prepared.run(*arrays)`` takes the arrays of
    ``run_labels`` in order, the op's outputs sit at ``positions`` of its result. ``direct``:
    whether those arrays are the run's values as they are (none needs normalising), so that
    an ``Executable`` whose one step is this op may pass its feeds straight to it
    (``executable.py``). Held by the op's compute function as ``compute.prepared_call``."""

    __slots__ = ("direct", "positions", "prepared", "run_labels")

    def __init__(self, run_labels: list[str], positions: list[int], direct: bool) -> None:
        self.prepared: PreparedForward | None = None
        self.run_labels, self.positions, self.direct = run_labels, positions, direct


@dataclass(frozen=True)
class CellSpec:
    options_type: type[CoreOptions]  # the compiled core's options (its op names and gate count)
    descriptor_type: type[_Descriptor]
    # Saved forward tensors beyond source/recurrentWeight/sourceGradient/zState.
    gradient_required: tuple[str, ...]
    # Gradients returned, in order, one per given input (SPEC.md section 6).
    returned: tuple[str, ...]
    training_outputs: tuple[str, ...] = ("h", "zState")  # a training op's outputs (section 5)
    # Descriptor properties that do not change the math of the gradient op.
    forward_only_flags: tuple[str, ...] = ("training", "produceCell")
    # The descriptor flag under which a training forward op can keep the internal
    # recurrentProduct for its gradient op (the GRU's resetAfter), or None.
    product_flag: str | None = None

    def keeps_product(self, descriptor: _Descriptor) -> bool:
        """Whether this cell's forward op can keep recurrentProduct (forward_matching)."""
        return self.product_flag is not None and bool(getattr(descriptor, self.product_flag))

    @property
    def name(self) -> str:
        """The forward op, e.g. "LSTM"."""
        return str(self.options_type.op)

    @property
    def gradient_name(self) -> str:
        """The gradient op, e.g. "LSTMGradients"."""
        return str(self.options_type.gradient_op)

    @property
    def gates(self) -> int:
        """G, the gate blocks of zState, R, W and b."""
        return int(self.options_type.gates)

    def core_options(self, descriptor: _Descriptor) -> CoreOptions:
        """The descriptor's math-changing properties as the core's typed options."""
        values = descriptor.as_dict()
        for flag in self.forward_only_flags:
            values.pop(flag, None)
        return self.options_type(**values)


def check_descriptor(op: str, spec: CellSpec, descriptor: _Descriptor | None) -> _Descriptor:
    if descriptor is None:
        return spec.descriptor_type()
    if not isinstance(descriptor, spec.descriptor_type):
        raise TypeError(f"{op}: descriptor: expected {spec.descriptor_type.__name__}, "
                        f"got {type(descriptor).__name__}")
    copied = descriptor.copy()  # copy-on-build (SPEC.md section 3)
    try:
        copied._validate()
    except (TypeError, ValueError) as error:
        raise type(error)(f"{op}: descriptor: {error}") from None
    return copied


def check_dtypes(op: str, inputs: Checked, dtype: DataType) -> None:
    """Every Tensor input shares the op's dataType (arrays are converted to it)."""
    for label, value in inputs.items():
        if isinstance(value, Tensor) and value.dataType != dtype:
            raise TypeError(f"{op}: {label}: expected dataType {dtype.value} like source, "
                            f"got {value.dataType.value}")


def collect_inputs(graph: GraphBuilder, op: str, arguments: Arguments,
                   required: tuple[str, ...]) -> tuple[Checked, DataType]:
    """Check the call's arguments, in Swift order: each a Tensor of this graph, None or an
    array of real numbers (not converted yet: ``to_tensors`` does that once the shapes are
    checked). Returns them and the op's dataType (the source's; an array source of float64
    is float64, any other float32)."""
    inputs: Checked = {label: graph._argument(value, f"{op}: {label}")
                       for label, value in arguments.items()}
    source = inputs["source"]
    if source is None:
        raise TypeError(f"{op}: source: expected an rnngraph Tensor, got None")
    for label in required:
        if inputs[label] is None:
            raise ValueError(f"{op}: {label} is required")
    if isinstance(source, Tensor):
        if not source.dataType.is_float:
            raise TypeError(f"{op}: source: expected dataType float32 or float64, got "
                            f"{source.dataType.value}")
        return inputs, source.dataType
    return inputs, default_data_type(source.dtype)


def to_tensors(graph: GraphBuilder, op: str, inputs: Checked,
               dtype: DataType) -> dict[str, Tensor | None]:
    """The checked inputs as Tensors: arrays become constants of the op's dataType (one
    whose conversion can lose precision warns, as a feed does: README "Feeds and
    precision")."""
    for label, value in inputs.items():
        if isinstance(value, np.ndarray) and loses_precision(value, dtype.numpy):
            wider = " or a float64 source" if dtype == DataType.float32 else ""
            warnings.warn(f"{op}: {label}: an array of {value.dtype.name} converted to the op's "
                          f"{dtype.value} loses precision; pass {dtype.value} (e.g. "
                          f"array.astype(np.{dtype.value})){wider} to avoid this warning",
                          UserWarning, stacklevel=4)
    return {label: value if value is None or isinstance(value, Tensor)
            else graph._constant(value, None, dtype, None, f"{op}: {label}")
            for label, value in inputs.items()}


def forward_op(graph: GraphBuilder, spec: CellSpec, arguments: Arguments,
               descriptor: _Descriptor | None, name: str | None,
               outputs_for: Callable[[Any], list[str]]) -> list[Tensor]:
    """Record a forward op. ``outputs_for(descriptor)`` lists the returned outputs among
    'h', 'c', 'zState' (SPEC.md section 5)."""
    op = spec.name
    descriptor = check_descriptor(op, spec, descriptor)
    inputs, dtype = collect_inputs(graph, op, arguments, ("recurrentWeight",))
    check_dtypes(op, inputs, dtype)
    bidirectional = descriptor.bidirectional
    sizes = infer_sizes(op, spec, inputs, bidirectional)
    tensors = to_tensors(graph, op, inputs, dtype)
    D = 2 if bidirectional else 1
    T, N, H = sizes["T"], sizes["N"], sizes["H"]
    DH = None if H is None else D * H
    DGH = None if H is None else D * spec.gates * H
    shape_of = {"h": (T, N, DH), "c": (T, N, DH), "zState": (T, N, DGH),
                "recurrentProduct": (T, N, DH)}
    wanted = outputs_for(descriptor)
    options = spec.core_options(descriptor)  # parsed once, used every run

    static = fully_known(tensors)
    # (a run looks only at the inputs whose arrays may not be dense yet)
    to_normalise = unsettled(tensors, whole_mask(sizes, bidirectional))
    # Weights that are graph constants are packed for the kernels once, at the first run, and
    # the packed copy serves every later run (as an inference runtime packs its initializers).
    weights = [tensors[label] for label in ("recurrentWeight", "inputWeight")]
    constant_weights = all(t is None or t.op.kind == "constant" for t in weights)
    packed: PackedWeights | None = None
    # An op whose shapes are all known when built is checked once, at its first run, and
    # kept prepared (_core.prepare_forward): a later run checks and passes only the inputs
    # that are not constants (benchmarks/call_overhead.py measures what that saves).
    run_labels = [label for label, t in tensors.items()
                  if t is not None and t.op.kind != "constant"]
    run_unsettled = [label for label in to_normalise if label in run_labels]

    def compute_for(names: list[str]) -> Compute:
        """The op's run-time computation returning ``names`` (training when zState is one;
        recurrentProduct: kept for the gradient op, forward_matching.kept_product)."""
        training = "zState" in names
        keep = "recurrentProduct" in names
        # where each name sits in rnn_forward's result (without final_states: h, c, zState,
        # then recurrentProduct when asked for)
        positions = [("h", "c", "zState", "recurrentProduct").index(k) for k in names]
        call = PreparedCall(run_labels, positions, direct=not run_unsettled)

        def run_prepared(prepared: PreparedForward, arrays: RunArrays) -> list[NDArray[Any]]:
            if run_unsettled:
                arrays = normalise(op, arrays, sizes, bidirectional, run_unsettled)
            made: tuple[Any, ...] = prepared.run(*[arrays[label] for label in run_labels])
            return [made[i] for i in positions]

        def compute(arrays: RunArrays) -> list[NDArray[Any]]:
            nonlocal packed
            if call.prepared is not None:  # (static: this run's inputs have the first run's
                return run_prepared(call.prepared, arrays)  # shapes)
            # Shapes known when building were checked then, and feeds are checked against
            # their placeholders; only dimensions left open need the checks again now.
            run_sizes = sizes if static else infer_sizes(op, spec, arrays, bidirectional)
            dense = normalise(op, arrays, run_sizes, bidirectional, to_normalise)
            if constant_weights and packed is None:
                packed = _core.pack_forward_weights(options, dense["recurrentWeight"],
                                                    dense["inputWeight"])
            if static:
                call.prepared = _core.prepare_forward(options, dense, run_labels, training=training,
                                                      packed=packed, recurrent_product=keep)
                return run_prepared(call.prepared, dense)
            produced: tuple[Any, ...] = _core.rnn_forward(options, dense, training=training,
                                                          packed=packed, recurrent_product=keep)
            return [produced[i] for i in positions]  # (c, zState: None where not made)

        compute.prepared_call = call  # type: ignore[attr-defined]
        return compute

    # (autodiff turns a non-training op into a training one, keeping its outputs, when a
    # gradient needs its state, and a gradient op may ask for the kept product:
    # "compute_for" and "shape_of" let forward_matching.forward_outputs add them.)
    return graph._add(op, name, tensors, compute_for(wanted),
                      [(k, shape_of[k], dtype) for k in wanted],
                      {"descriptor": descriptor, "spec": spec, "outputs": wanted,
                       "compute_for": compute_for, "shape_of": shape_of})


def gradient_op(graph: GraphBuilder, spec: CellSpec, arguments: Arguments,
                descriptor: _Descriptor | None, name: str | None) -> list[Tensor]:
    """Record a gradient op; returns one gradient Tensor per given differentiable input,
    in ``spec.returned`` order, each shaped like its input (SPEC.md section 6)."""
    op = spec.gradient_name
    descriptor = check_descriptor(op, spec, descriptor)
    inputs, dtype = collect_inputs(graph, op, arguments, ("recurrentWeight", "sourceGradient",
                                                          "zState", *spec.gradient_required))
    check_dtypes(op, inputs, dtype)
    check_forward_outputs(op, spec, descriptor, inputs)
    check_matching_forward(op, spec, descriptor, inputs["zState"])
    bidirectional = descriptor.bidirectional
    sizes = infer_sizes(op, spec, inputs, bidirectional)
    tensors = to_tensors(graph, op, inputs, dtype)
    options = spec.core_options(descriptor)
    returned = [label for label in spec.returned if tensors.get(label) is not None]
    static = fully_known(tensors)
    to_normalise = unsettled(tensors, whole_mask(sizes, bidirectional))

    def compute(arrays: RunArrays) -> list[NDArray[Any]]:
        run_sizes = sizes if static else infer_sizes(op, spec, arrays, bidirectional)
        dense = normalise(op, arrays, run_sizes, bidirectional, to_normalise)
        grads = _core.rnn_gradients(options, dense)
        return [grads[label].reshape(arrays[label].shape) for label in returned]

    outputs = [(f"d{label}", tensors[label].shape, dtype)  # type: ignore[union-attr]
               for label in returned]  # (only given inputs are returned)
    grads = graph._add(op, name, tensors, compute, outputs,
                       {"descriptor": descriptor, "spec": spec, "returned": returned})
    warn_unmatched_inputs(op, spec, grads[0].op)
    # Last, once nothing can fail: the forward op's kept product, an input the kernel reads
    # instead of computing it (its inputs dict is ``tensors``; the run reads it from there).
    product = kept_product(graph, spec, descriptor, tensors)
    if product is not None:
        tensors["recurrentProduct"] = product
    return grads
