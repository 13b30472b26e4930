"""``Graph``: records ops symbolically, checks shapes when they are built, runs on NumPy."""

from __future__ import annotations

import copy
import itertools
import math
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

# numpy.ma, which NumPy loads lazily, is loaded here rather than by a run's first feed: a
# fork() taken while another thread imports it would leave its import lock held in the child.
import numpy as np
import numpy.ma

from rnngraph.dtypes import (
    DataType,
    as_data_type,
    broadcast_view,
    check_integers,
    default_data_type,
    dense,
    exact_integer_bits,
    frozen_copy,
    loses_precision,
    naming_memory_errors,
)
from rnngraph.ops.activations import ActivationOps
from rnngraph.ops.arguments import is_integer
from rnngraph.ops.arithmetic import ArithmeticOps
from rnngraph.ops.conversion import ConversionOps
from rnngraph.ops.gru import GRUOps
from rnngraph.ops.indexing import IndexingOps
from rnngraph.ops.loss import LossOps
from rnngraph.ops.lstm import LSTMOps
from rnngraph.ops.optimizers import OptimizerOps
from rnngraph.ops.reductions import ReductionOps
from rnngraph.ops.reshaping import ReshapingOps
from rnngraph.ops.single_gate_rnn import SingleGateRNNOps
from rnngraph.ops.slicing import SlicingOps
from rnngraph.ops.state import StateOps
from rnngraph.plan import Plan
from rnngraph.shapes import (
    compatible,
    larger_than_any_array,
    refuse_unaddressable,
    shape_text,
)
from rnngraph.tensor import UNPICKLABLE, Tensor

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike, NDArray

    from rnngraph._typing import Compute, OutputSpec
    from rnngraph.executable import Executable


class Operation:
    """One recorded op: its inputs by Swift label, its outputs and how to compute them."""

    def __init__(self, kind: str, name: str, inputs: dict[str, Tensor | None],
                 compute: Compute | None, attrs: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.name = name
        self.inputs = inputs  # label -> Tensor or None, in Swift argument order
        self.compute = compute  # dict label -> ndarray/None  ->  list of ndarrays
        self.attrs = attrs or {}
        self.outputs: list[Tensor] = []

    def __repr__(self) -> str:
        return f"Operation({self.kind!r}, name={self.name!r})"

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError(UNPICKLABLE.format(what=f"an Operation ({self.name!r})"))

    def __deepcopy__(self, memo: dict[int, Any]) -> Operation:
        """Copied with its Graph (see ``Graph.__deepcopy__``): every attribute deep-copied
        (the compute functions shared, as copy.deepcopy shares functions), a constant's value
        read-only as the original's, and a recurrent op's computation made anew: its call,
        prepared at its first run, must hold the copy's arrays, not the original's."""
        new = Operation.__new__(Operation)
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        if self.kind == "constant":
            new.attrs["value"].setflags(write=False)
        if "compute_for" in new.attrs:
            new.compute = new.attrs["compute_for"](list(new.attrs["outputs"]))
        return new


def _real_array(value: ArrayLike, where: str) -> NDArray[Any]:
    """``value`` as an array of real numbers (no copy when it is one), its errors naming
    ``where``: a symbolic Tensor, ragged nested lists or a non-numeric dtype are refused."""
    if isinstance(value, Tensor):
        raise TypeError(f"{where}: expected an array, got a symbolic Tensor")
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
        # np.asarray would drop the mask and compute with whatever the masked slots hold
        raise ValueError(f"{where}: a masked array with masked elements; fill them first "
                         "(value.filled(x)), or pass value.data to use what they hold")
    try:
        array = np.asarray(value)
    except ValueError as error:  # ragged nested lists
        raise ValueError(f"{where}: not a rectangular array ({error})") from None
    except (TypeError, RuntimeError) as error:  # its __array__ refused (a torch tensor that
        # requires grad, a meta tensor, bfloat16): say which feed
        raise TypeError(f"{where}: cannot be read as a NumPy array: {error}") from None
    if array.dtype.kind not in "fiu":
        raise TypeError(f"{where}: expected real numbers, got dtype {array.dtype}")
    return array


def _fits(value: object, tensor: Tensor) -> TypeGuard[NDArray[Any]]:
    """Whether a feed is already what the op needs: an array of the placeholder's exact
    shape and dtype, C-contiguous and aligned (then it is used as it is)."""
    if type(value) is not np.ndarray or value.shape != tensor.shape:
        return False
    flags = value.flags
    return value.dtype == tensor.dataType.numpy and flags.c_contiguous and flags.aligned


def _read_as(placeholder: Tensor) -> str:
    """Where a placeholder's feed goes, for a feed's shape error: `` (read as LSTM 'lstm':
    source)``, each op and label that reads it (empty when none does)."""
    readers = [f"{op.kind} {op.name!r}: {label}" for op in placeholder.graph._ops
               for label, tensor in op.inputs.items() if tensor is placeholder]
    return f" (read as {', '.join(readers)})" if readers else ""


def _feed_array(tensor: Tensor, value: ArrayLike, call: str = "run") -> NDArray[Any]:
    """Convert a feed to the placeholder's dtype and check its shape; never reinterpret bytes.

    The element kind and the shape are checked before anything is converted or copied, so a
    wrong feed costs nothing (a broadcast view of a huge shape is refused before its dense
    copy). A broadcast view fed to a placeholder with unknown dimensions stays a view (of
    its converted, compact data): the op that reads it checks its shape first, then makes it
    dense. A conversion that can lose precision warns once per placeholder of its Graph
    (``_warn_if_lossy``; the Graph's ``_warned_feeds`` holds those that have warned)."""
    if _fits(value, tensor):
        return value  # the common case: already what the op needs
    where = f"{call}: feed for {tensor.name!r}"
    array = _real_array(value, where)
    check_integers(array, tensor.dataType, where, "placeholder")
    if not compatible(tensor.shape, array.shape):
        raise ValueError(f"{where}: expected shape {shape_text(tensor.shape)}, got "
                         f"{list(array.shape)}{_read_as(tensor)}")
    if tensor.dataType.is_float:
        warned = tensor.graph._warned_feeds
        if tensor not in warned and _warn_if_lossy(tensor, value, array, where):
            warned.add(tensor)  # after the warning: under an "error" filter every run raises
    with naming_memory_errors(where):
        if None in tensor.shape and 0 in array.strides and array.size > 1:
            return broadcast_view(array, tensor.dataType.numpy)
        return dense(array, tensor.dataType.numpy)


def _warn_if_lossy(tensor: Tensor, value: object, array: NDArray[Any], where: str) -> bool:
    """Warn (``UserWarning``) when converting a feed to a float placeholder's dtype can lose
    precision; returns whether it warned. Only a feed that states its dtype (a NumPy array or
    scalar, or any array-like with a ``dtype``) can warn: Python numbers and lists carry no
    precision of their own, and convert silently as in NumPy's arithmetic. Such a feed warns

    - from a float dtype wider than the placeholder's (float64 into float32), whatever its
      values;
    - from an integer dtype when some value lies beyond the integers the placeholder's dtype
      holds exactly, ±2**24 for float32 (int32 and int64) and ±2**53 for float64 (int64):
      small integers such as counts and labels convert exactly and stay quiet.

    Narrowing integers (int64 into int32) is range-checked instead, and raises."""
    target = tensor.dataType.numpy
    if not hasattr(value, "dtype") or not loses_precision(array, target):
        return False
    if array.dtype.kind == "f":
        lost = f"{array.dtype} converted to the placeholder's {target} loses precision"
    else:
        lost = (f"{array.dtype} values beyond ±2**{exact_integer_bits(target)} converted to "
                f"the placeholder's {target} lose precision")
    fix = f"feed {target} (e.g. array.astype(np.{target}))"
    if target == np.float32:
        fix += " or make the placeholder float64 (dataType=rg.float64)"
    warnings.warn(f"{where}: {lost}; {fix} to avoid this warning (shown once per placeholder)",
                  UserWarning, stacklevel=4)
    return True


class Graph(SingleGateRNNOps, LSTMOps, GRUOps, StateOps, ArithmeticOps, ActivationOps,
            ReductionOps, LossOps, IndexingOps, ReshapingOps, SlicingOps, ConversionOps,
            OptimizerOps):
    """A graph of MPSGraph ops (the recurrent ops and the ops a training step needs around
    them), built with MPSGraph's method and argument names.

    >>> g = Graph()
    >>> x = g.placeholder(shape=(T, N, I), dataType=float32, name="x")
    >>> h, z = g.singleGateRNN(x, recurrentWeight=R, inputWeight=W, descriptor=d)
    >>> g.run(feeds={x: x_np, ...}, targetTensors=[h])   # -> {h: ndarray}
    """

    def __init__(self) -> None:
        # The Graph owns its ops, which own their output tensors; a Tensor refers to its op
        # and Graph weakly, so nothing refers back and reference counting alone frees a
        # deleted Graph (with its constants and packed weights) at once.
        self._ref = weakref.ref(self)  # the reference its tensors hold
        self._ops: list[Operation] = []
        self._names = itertools.count()
        self._plans: dict[tuple[tuple[Tensor, ...], int], Plan] = {}
        # gradients(of, with_) recorded so far: called again, it returns the same tensors.
        self._gradients: dict[tuple[Tensor, frozenset[Tensor]], dict[Tensor, Tensor]] = {}
        # Placeholders whose feed has warned of lost precision (once each, see _feed_array).
        self._warned_feeds: set[Tensor] = set()

    def __repr__(self) -> str:
        counts = {"placeholder": 0, "variable": 0}
        for op in self._ops:
            if op.kind in counts:
                counts[op.kind] += 1
        return (f"Graph(ops={len(self._ops)}, placeholders={counts['placeholder']}, "
                f"variables={counts['variable']})")

    def __reduce_ex__(self, protocol: object) -> Any:
        raise TypeError(UNPICKLABLE.format(what="a Graph"))

    def __copy__(self) -> Graph:
        raise TypeError("rnngraph: a shallow copy of a Graph would share its ops; use "
                        "copy.deepcopy(graph) for an independent Graph")

    def __deepcopy__(self, memo: dict[int, Any]) -> Graph:
        """A Graph of copied ops and tensors that refer to the copy (their weak references
        are made anew, not shared with this Graph)."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new._ref = weakref.ref(new)  # before the tensors are copied: they refer to it
        new._ops = copy.deepcopy(self._ops, memo)
        new._names = itertools.count(len(self._ops))
        new._plans = {}
        new._gradients = copy.deepcopy(self._gradients, memo)
        new._warned_feeds = set()  # the copy's placeholders warn anew
        return new

    # -- building -----------------------------------------------------------------------
    def _add(self, kind: str, name: str | None, inputs: dict[str, Tensor | None],
             compute: Compute | None, outputs: Iterable[OutputSpec],
             attrs: dict[str, Any] | None = None) -> list[Tensor]:
        """Record an op; ``outputs`` is a list of (suffix, shape, DataType)."""
        name = name if name is not None else f"{kind}_{next(self._names)}"
        if not isinstance(name, str):
            raise TypeError(f"{kind}: name: expected a str or None, got {name!r}")
        op = Operation(kind, name, inputs, compute, attrs)
        for index, (suffix, sizes, dtype) in enumerate(outputs):
            label = name if not suffix else f"{name}/{suffix}"
            shape = tuple(sizes)
            what = "shape" if kind == "placeholder" else f"output {label!r} would have shape"
            refuse_unaddressable(shape, dtype.numpy.itemsize, f"{kind}: {what}")
            op.outputs.append(Tensor(self, op, index, shape, dtype, label))
        self._ops.append(op)
        return list(op.outputs)  # the caller's own list: outputs added later stay internal

    def _own(self, tensor: object, where: str) -> Tensor:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{where}: expected an rnngraph Tensor, got {type(tensor).__name__}")
        if tensor._graph() is not self:
            if tensor._graph() is None:
                raise ValueError(f"{where}: tensor {tensor.name!r} belongs to a Graph that was "
                                 "deleted")
            raise ValueError(f"{where}: tensor {tensor.name!r} belongs to another Graph")
        return tensor

    def _argument(self, value: object, where: str) -> Tensor | NDArray[Any] | None:
        """An op argument checked but not converted: a Tensor of this graph, None, or a
        NumPy array of real numbers (which the op turns into a constant once its shape is
        checked)."""
        if value is None or isinstance(value, Tensor):
            return None if value is None else self._own(value, where)
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "fiu":
                raise TypeError(f"{where}: expected real numbers, got an array of dtype "
                                f"{value.dtype}")
            return value
        raise TypeError(f"{where}: expected an rnngraph Tensor, a numpy.ndarray or None, "
                        f"got {type(value).__name__}")

    def placeholder(self, shape: Iterable[int | None],
                    dataType: DataType | DTypeLike = DataType.float32,
                    name: str | None = None) -> Tensor:
        """A tensor fed at run time. ``None`` in ``shape`` marks a dimension known only then.

        ``dataType``: ``rg.float32``, ``rg.float64``, ``rg.int32`` or ``rg.int64`` (or the
        NumPy dtype or its name)."""
        dtype = as_data_type(dataType, "placeholder: dataType")
        try:
            dims = tuple(shape)
        except TypeError:
            raise TypeError(f"placeholder: shape: expected a sequence of sizes, got {shape!r}") from None
        for d in dims:
            if d is not None and not _is_size(d):
                raise ValueError(f"placeholder: shape: sizes must be non-negative ints or None, got {shape!r}")
        dims = tuple(None if d is None else int(d) for d in dims)
        return self._add("placeholder", name, {}, None, [("", dims, dtype)])[0]

    def constant(self, value: ArrayLike, shape: Iterable[int] | None = None,
                 dataType: DataType | DTypeLike | None = None,
                 name: str | None = None) -> Tensor:
        """A constant: a scalar filled to ``shape``, or array data (reshaped to ``shape``).

        Everything is checked before the data is converted; the constant holds one dense,
        read-only copy."""
        return self._constant(value, shape, dataType, name, "constant")

    def _constant(self, value: ArrayLike, shape: Iterable[int] | None,
                  dataType: DataType | DTypeLike | None, name: str | None,
                  where: str) -> Tensor:
        """``constant``, its errors naming ``where`` (``constant``, or the op and label of
        an array given as an op's input)."""
        array = self._constant_array(value, shape, dataType, where)
        return self._add("constant", name, {}, None, [("", array.shape, DataType(array.dtype.name))],
                         {"value": array})[0]

    def _constant_array(self, value: ArrayLike, shape: Iterable[int] | None,
                        dataType: DataType | DTypeLike | None, where: str,
                        label: str = "value") -> NDArray[Any]:
        """``value`` checked and converted to one dense, read-only array (of ``shape``);
        errors name ``where`` and ``label`` (the value's label)."""
        array = _real_array(value, f"{where}: {label}")
        if dataType is None:
            dataType = default_data_type(array.dtype)
        dtype = as_data_type(dataType, f"{where}: dataType")
        check_integers(array, dtype, f"{where}: {label}", "constant")
        if shape is not None:
            dims = _sizes(shape, f"{where}: shape")
            if larger_than_any_array(dims, dtype.numpy.itemsize):
                raise MemoryError(f"{where}: shape: {list(dims)} holds {math.prod(dims)} "
                                  "elements, more than an array can address")
            if array.ndim == 0:
                array = np.broadcast_to(array, dims)  # a view: filled by the copy below
            elif array.size != math.prod(dims):
                raise ValueError(f"{where}: shape: {list(dims)} holds {math.prod(dims)} "
                                 f"elements, {label} {list(array.shape)} has {array.size}")
            else:
                array = array.reshape(dims)
        return frozen_copy(array, dtype.numpy, where)  # one dense copy

    # -- running ------------------------------------------------------------------------
    def run(self, feeds: Mapping[Tensor, ArrayLike] | None = None,
            targetTensors: Sequence[Tensor] | None = None,
            targetOperations: Sequence[Operation] | None = None) -> dict[Tensor, NDArray[Any]]:
        """Evaluate ``targetTensors`` (a list) given ``feeds`` (a dict or other Mapping
        {placeholder: array}, each shaped like its placeholder), and run
        ``targetOperations`` (assigns); returns {Tensor: numpy.ndarray} for ``targetTensors``.
        Every read in a run sees the variables' values from before the run; its assigns take
        effect together when it ends.

        A feed may be any real array-like; it is converted to its placeholder's dataType.
        A conversion that can lose precision warns (``UserWarning``), once per placeholder of
        this Graph: a float64 array fed to a float32 placeholder, or integers beyond ±2**24
        (float32) or ±2**53 (float64) fed to a float placeholder. Python numbers and lists
        never warn (they state no dtype, as in NumPy's arithmetic), and integers fed to an
        integer placeholder are range-checked instead (``ValueError``)."""
        feeds = {} if feeds is None else feeds
        if not isinstance(feeds, Mapping):
            raise TypeError("run: feeds: expected a dict {placeholder Tensor: array}")
        if isinstance(targetTensors, Tensor) or (targetTensors is None and not targetOperations):
            raise TypeError("run: targetTensors: expected a list of Tensors")
        targets = tuple(targetTensors or ())
        ref = self._ref
        for t in targets:
            if type(t) is not Tensor or t._graph is not ref:
                self._own(t, "run: targetTensors")  # raises the error that fits
        assigns = () if targetOperations is None else self._target_operations(targetOperations)
        values: dict[Tensor, NDArray[Any]] = {}
        for tensor, value in feeds.items():
            if type(tensor) is not Tensor or tensor._graph is not ref:
                self._own(tensor, "run: feeds")
            if not tensor._placeholder:
                raise ValueError(f"run: feeds: {tensor.name!r} is not a placeholder")
            # (as it is when it fits; a broadcast one may stay a view)
            values[tensor] = _feed_array(tensor, value)

        plan = self._plan(targets + assigns)
        plan.check_fed(values, "run")
        return dict(zip(targets, plan.execute(values, targets, assigns)))

    def compile(self, feeds: Sequence[Tensor] | Mapping[Tensor, Iterable[int] | None],
                targetTensors: Sequence[Tensor] | None = None,
                targetOperations: Sequence[Operation] | None = None) -> Executable:
        """Compile a run once for many calls (MPSGraph's ``compile(with:feeds:targetTensors:
        targetOperations:compilationDescriptor:)``): returns an ``Executable`` whose
        ``run(inputs)`` takes one array per feed, in the order of ``feeds``, and returns the
        ``targetTensors``' arrays in order, as ``run`` would with the same feeds.

        ``feeds``: the placeholders the run reads, as a list (each of fully known shape) or
        a dict {placeholder: shape} fixing the dimensions a placeholder leaves open (None:
        the placeholder's own shape). Every placeholder the targets need must be given, and
        each shape must fit its placeholder: both are checked here, not at the first run (a
        shape that fits its placeholder but not an op reading it is the first run's error).

        >>> x = g.placeholder((None, 8, 16), rg.float32)       # [T, N, I], T left open
        >>> h, = g.LSTM(x, recurrentWeight=R, inputWeight=W)  # R [4H, H], W [4H, I]
        >>> exe = g.compile(feeds={x: (25, 8, 16)}, targetTensors=[h])
        >>> (h_np,) = exe.run([x_np])                          # x_np [25, 8, 16] -> [25, 8, H]

        Each call of ``Executable.run`` skips what ``run`` does per call to read its feed
        dict, check its targets and find its plan; the ops themselves are the same (an RNN
        op of fully known shapes is prepared at its first run, by either)."""
        from rnngraph.executable import Executable

        return Executable(self, feeds, targetTensors, targetOperations)

    def _target_operations(self, operations: Sequence[Operation] | None,
                           where: str = "run") -> tuple[Tensor, ...]:
        """The assigns' new values (the tensors a run computes for them), checked."""
        if operations is None:
            return ()
        if isinstance(operations, Operation) or not isinstance(operations, (list, tuple)):
            raise TypeError(f"{where}: targetOperations: expected a list of Operations")
        found = []
        for op in operations:
            if not isinstance(op, Operation):
                raise TypeError(f"{where}: targetOperations: expected Operations (from assign), "
                                f"got {type(op).__name__}")
            if not op.outputs:
                raise ValueError(f"{where}: targetOperations: {op.name!r} belongs to another Graph")
            if op.outputs[0]._graph is not self._ref:
                self._own(op.outputs[0], f"{where}: targetOperations")  # (says which Graph)
            if op.kind != "assign":
                raise ValueError(f"{where}: targetOperations: {op.name!r} is a {op.kind} op; only "
                                 "assign operations are run for their effect")
            found.append(op.outputs[0])
        return tuple(found)

    def _plan(self, targets: tuple[Tensor, ...]) -> Plan:
        """What a run of ``targets`` does; cached until the graph grows."""
        key = (targets, len(self._ops))
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = Plan(self._ops_needed(targets), targets)
        return plan

    def _ops_needed(self, targets: Iterable[Tensor]) -> list[Operation]:
        needed: set[Operation] = set()
        stack = [t.op for t in targets]
        while stack:
            op = stack.pop()
            if op in needed:
                continue
            needed.add(op)
            stack.extend(t.op for t in op.inputs.values() if t is not None)
        return [op for op in self._ops if op in needed]

    # -- differentiation ------------------------------------------------------------------
    def gradients(self, of: Tensor, with_: Iterable[Tensor],
                  name: str | None = None) -> dict[Tensor, Tensor]:
        """Add the backward ops for d(sum(of))/d(t) for each t in ``with_`` (``of`` is usually
        a scalar loss): {t: gradient shaped like t}. Integer tensors and tensors ``of`` does
        not depend on get zeros. Called again for the same ``of`` and ``with_``, it returns
        the tensors it recorded the first time. ``name``: accepted as in MPSGraph's
        ``gradients(of:with:name:)``; the backward ops get generated names."""
        from rnngraph.autodiff import gradients

        return gradients(self, of, with_)


def _is_size(d: object) -> TypeGuard[int | np.integer[Any]]:
    """A non-negative int (a NumPy integer too; not a bool)."""
    return is_integer(d) and bool(d >= 0)


def _sizes(shape: Iterable[object], where: str) -> tuple[int, ...]:
    """``shape`` as a tuple of ints, each a non-negative size (a constant's shape, a compiled
    feed's), its errors naming ``where``."""
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{where}: expected a sequence of sizes, got {shape!r}") from None
    if not all(_is_size(d) for d in dims):
        raise ValueError(f"{where}: sizes must be non-negative ints, got {shape!r}")
    return tuple(int(d) for d in dims)  # type: ignore[call-overload]
