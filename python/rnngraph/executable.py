"""``Executable``: a run of a Graph compiled once (``Graph.compile``), as MPSGraph's
``MPSGraphExecutable`` is, for a step called many times: its feeds, their shapes, its targets
and its plan are checked and fixed when compiled, and each ``run`` takes the arrays in
``feedTensors`` order and returns the results in ``targetTensors`` order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph.graph import _feed_array, _sizes
from rnngraph.shapes import compatible, refuse_unaddressable, shape_text
from rnngraph.tensor import UNPICKLABLE, Tensor

if TYPE_CHECKING:
    from collections.abc import Iterable

    from numpy.typing import ArrayLike, NDArray

    from rnngraph.graph import Graph, Operation
    from rnngraph.plan import Plan

# What a compiled feed may be given as: its placeholder alone (the placeholder's own shape,
# every dimension known), or {placeholder: shape} (fixing the dimensions left open).
Feeds = Sequence[Tensor] | Mapping[Tensor, "Iterable[int] | None"]


class Executable:
    """A Graph's run compiled once: ``run(inputs)`` evaluates ``targetTensors`` and runs
    ``targetOperations`` (assigns) exactly as ``Graph.run`` would with the same feeds, with
    less work per call (no feed dict to read, no plan to look up).

    >>> exe = g.compile(feeds=[x, h0], targetTensors=[h])   # x [T, N, I], h0 [N, H]
    >>> (h_np,) = exe.run([x_np, h0_np])   # inputs in feedTensors order; h_np [T, N, H]

    Each result is an array of its own (a constant target comes back read-only, as from
    ``Graph.run``). It keeps its Graph alive. Ops added to the Graph later do not change
    what it runs."""

    def __init__(self, graph: Graph, feeds: Feeds, targetTensors: Sequence[Tensor] | None,
                 targetOperations: Sequence[Operation] | None) -> None:
        where = "compile"
        if isinstance(targetTensors, Tensor) or (targetTensors is None and not targetOperations):
            raise TypeError(f"{where}: targetTensors: expected a list of Tensors")
        targets = tuple(graph._own(t, f"{where}: targetTensors") for t in targetTensors or ())
        assigns = graph._target_operations(targetOperations, where)
        self._graph = graph
        self._feeds, self._shapes = _compiled_feeds(graph, feeds)
        self._targets, self._assigns = targets, assigns
        self._plan = graph._plan(targets + assigns)
        self._only_op = _only_op(self._plan, targets, assigns, self._feeds)
        # (the op's PreparedCall, the feeds' order for it), once it has one
        self._direct: tuple[Any, list[int]] | None = None
        if self._only_op is not None:  # each target's place among the op's outputs
            self._target_outputs = [self._only_op.outputs.index(t) for t in targets]
        # A target listed again gets an array of its own (each result may be written to).
        self._repeats = [i for i, t in enumerate(targets) if t in targets[:i]]
        self._plan.check_fed(set(self._feeds), f"{where}: feeds")

    @property
    def feedTensors(self) -> list[Tensor]:
        """The placeholders ``run`` takes arrays for, in order."""
        return list(self._feeds)

    @property
    def targetTensors(self) -> list[Tensor]:
        """The tensors ``run`` returns, in order."""
        return list(self._targets)

    def __repr__(self) -> str:
        feeds = ", ".join(f"{t.name!r} {shape_text(s)}" for t, s in zip(self._feeds, self._shapes))
        return (f"Executable(feeds=[{feeds}], targets={[t.name for t in self._targets]}, "
                f"assigns={len(self._assigns)})")

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError(UNPICKLABLE.format(what="an Executable"))

    def run(self, inputs: Sequence[ArrayLike]) -> list[NDArray[Any]]:
        """Evaluate the targets given ``inputs``, one array per ``feedTensors`` entry in that
        order, each of its compiled shape (converted to its placeholder's dataType as
        ``Graph.run`` converts a feed, with the same warnings). Returns one array per
        ``targetTensors`` entry, in order."""
        if not isinstance(inputs, (list, tuple)):
            raise TypeError("Executable.run: inputs: expected a list of arrays in feedTensors "
                            f"order, got {type(inputs).__name__}")
        if len(inputs) != len(self._feeds):
            raise ValueError(f"Executable.run: inputs: expected one array for each of "
                             f"{[t.name for t in self._feeds]}, got {len(inputs)} arrays")
        results = self._direct_call(inputs)
        if results is None:
            results = self._general_call(inputs)
        for i in self._repeats:
            results[i] = results[i].copy()
        return results

    def _general_call(self, inputs: Sequence[ArrayLike]) -> list[NDArray[Any]]:
        """The run as ``Graph.run`` makes it, on the compiled plan."""
        values: dict[Tensor, NDArray[Any]] = {}
        for tensor, shape, value in zip(self._feeds, self._shapes, inputs):
            array = _feed_array(tensor, value, "Executable.run")  # (as it is when it fits)
            if array.shape != shape:  # (a placeholder with dimensions left open)
                raise ValueError(f"Executable.run: feed for {tensor.name!r}: expected shape "
                                 f"{shape_text(shape)} (as compiled), got {list(array.shape)}")
            values[tensor] = array
        return self._plan.execute(values, self._targets, self._assigns)

    def _direct_call(self, inputs: Sequence[ArrayLike]) -> list[NDArray[Any]] | None:
        """The run as one prepared call of its one op with the inputs as they are, where it
        is such a run (``_only_op``) and that op has prepared its call (at its first run);
        None otherwise, and where the call refuses an input (its dtype, shape or layout: the
        prepared call checks each array) or an input is not a plain ndarray (a subclass, a
        list): then ``run`` reads the feeds as ``Graph.run`` does, converting what it can and
        naming the feed in its error. The same values as the general path: the same call on
        the same arrays."""
        op = self._only_op
        if op is None:
            return None
        call = getattr(op.compute, "prepared_call", None)
        if call is None or not call.direct or call.prepared is None:
            return None
        state = self._direct
        if state is None or state[0] is not call:  # (the op's compute changed: autodiff)
            order = [self._feeds.index(op.inputs[label]) for label in call.run_labels]
            if len(set(order)) != len(self._feeds):  # a feed the call does not read: checked
                order = []  # on the general path
            state = self._direct = (call, order)  # (one store: threads see it whole)
        if not state[1]:
            return None
        arrays = [inputs[i] for i in state[1]]
        if not all(type(array) is np.ndarray for array in arrays):
            return None  # (the prepared call would take an ndarray subclass as it is)
        try:
            produced = call.prepared.run(*arrays)
        except (TypeError, ValueError):  # a dtype, shape or layout the general path reads
            return None  # or names
        return [produced[call.positions[i]] for i in self._target_outputs]


def _only_op(plan: Plan, targets: tuple[Tensor, ...], assigns: tuple[Tensor, ...],
             feeds: tuple[Tensor, ...]) -> Operation | None:
    """The one op of a run that is a single op reading only the feeds and constants and
    returning only its own outputs (a recurrent op's decoder step, say), else None."""
    if len(plan.steps) != 1 or assigns or plan.copied:
        return None
    op = plan.steps[0][0]
    fed = set(feeds)
    if not all(t.op is op for t in targets) or not all(
            t is None or t in fed or t.op.kind == "constant" for t in op.inputs.values()):
        return None
    return op


def _compiled_feeds(graph: Graph, feeds: Feeds) -> tuple[tuple[Tensor, ...],
                                                          tuple[tuple[int, ...], ...]]:
    """The feeds' placeholders, in order, and the shape each is compiled for."""
    where = "compile: feeds"
    if isinstance(feeds, Tensor) or not isinstance(feeds, (Mapping, list, tuple)):
        raise TypeError(f"{where}: expected a list of placeholders or a dict {{placeholder: "
                        f"shape}}, got {type(feeds).__name__}")
    given = feeds.items() if isinstance(feeds, Mapping) else ((t, None) for t in feeds)
    tensors: list[Tensor] = []
    shapes: list[tuple[int, ...]] = []
    for tensor, shape in given:
        graph._own(tensor, where)
        if not tensor._placeholder:
            raise ValueError(f"{where}: {tensor.name!r} is not a placeholder")
        if tensor in tensors:
            raise ValueError(f"{where}: {tensor.name!r} is given twice")
        dims = tensor.shape if shape is None else _shape(shape, tensor, where)
        if None in dims:
            raise ValueError(f"{where}: {tensor.name!r} has shape {shape_text(tensor.shape)}: "
                             "give its full shape ({placeholder: shape})")
        tensors.append(tensor)
        shapes.append(dims)  # type: ignore[arg-type]
    return tuple(tensors), tuple(shapes)


def _shape(shape: Iterable[int], tensor: Tensor, where: str) -> tuple[int, ...]:
    dims = _sizes(shape, f"{where}: shape for {tensor.name!r}")
    if not compatible(tensor.shape, dims):
        raise ValueError(f"{where}: shape for {tensor.name!r}: {list(dims)} does not fit the "
                         f"placeholder's {shape_text(tensor.shape)}")
    refuse_unaddressable(dims, tensor.dataType.numpy.itemsize,  # as placeholder() does
                         f"{where}: shape for {tensor.name!r}:")
    return dims
