"""The layouts of the recurrent ops' inputs (SPEC.md section 1): the shapes each label
accepts, the sizes T, N, I, H learned from them, and the dense arrays the core takes."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph import shapes
from rnngraph.dtypes import dense

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from rnngraph._typing import RunArrays
    from rnngraph.ops.recurrent import Arguments, CellSpec
    from rnngraph.shapes import Layout, Sizes
    from rnngraph.tensor import Tensor

# Labels whose tensors are [N, D·H] states (also accepted as [1, N, D·H]).
STATE_LABELS = ("initState", "initCell", "stateGradient", "cellGradient")
# Labels whose tensors are [T, N, D·H] sequences. cellSequenceGradient (LSTM, internal: no
# Swift label) is dL/dc for every step, laid out as cellOutputFwd; recurrentProduct (GRU
# resetAfter, internal) is hm·R_oᵀ + b2 of every step as the forward op kept it.
SEQUENCE_LABELS = ("sourceGradient", "outputFwd", "cellOutputFwd", "cellSequenceGradient",
                   "recurrentProduct")


def layouts(label: str, spec: CellSpec, bidirectional: bool,
            has_input_weight: bool) -> list[Layout]:
    """The accepted layouts of ``label`` (SPEC.md section 1), as symbolic shapes."""
    G, D = spec.gates, 2 if bidirectional else 1
    T, N, I, H = (1, "T"), (1, "N"), (1, "I"), (1, "H")
    if label == "source":
        return [[T, N, I]] if has_input_weight else [[T, N, (D * G, "H")]]
    if label == "recurrentWeight":
        return [[2, (G, "H"), H]] if bidirectional else [[(G, "H"), H]]
    if label == "inputWeight":
        return [[(D * G, "H"), I]]
    if label == "bias":
        return [[(D * G, "H")]]
    if label in STATE_LABELS:
        return [[N, (D, "H")], [1, N, (D, "H")]]
    if label == "peephole":
        return [[(D * 4, "H")], [2, (4, "H")]] if bidirectional else [[(4, "H")]]
    if label == "secondaryBias":
        return [[(D, "H")]]
    if label in SEQUENCE_LABELS:
        return [[T, N, (D, "H")]]
    if label == "zState":
        return [[T, N, (D * G, "H")]]
    raise KeyError(label)


def infer_sizes(op: str, spec: CellSpec, inputs: Arguments, bidirectional: bool) -> Sizes:
    """Check every given input's shape (a Tensor's shape or an array's) and return the sizes
    T, N, I, H (None where unknown). Raises ValueError naming ``op`` and the label.

    The checks run once per signature of shapes (a training loop repeats one every step):
    the sizes are cached by the shapes, and each call gets its own copy of them."""
    shapes_given = tuple((label, tuple(v.shape)) for label, v in inputs.items() if v is not None)
    return dict(_checked_sizes(op, spec, shapes_given, bidirectional))


@functools.lru_cache(maxsize=1024)
def _checked_sizes(op: str, spec: CellSpec, shapes_given: tuple[tuple[str, tuple[Any, ...]], ...],
                   bidirectional: bool) -> Sizes:
    """``infer_sizes`` on the inputs' shapes (a wrong shape raises, and is never cached)."""
    shape_of = dict(shapes_given)
    has_w = "inputWeight" in shape_of
    if len(shape_of["source"]) != 3:
        raise ValueError(f"{op}: source: expected rank 3 [T, N, {'I' if has_w else 'G·H'}], "
                         f"got shape {list(shape_of['source'])}")
    rank_r = 3 if bidirectional else 2
    if len(shape_of["recurrentWeight"]) != rank_r:
        raise ValueError(f"{op}: recurrentWeight: expected rank {rank_r} "
                         f"({'bidirectional' if bidirectional else 'unidirectional'}), "
                         f"got shape {list(shape_of['recurrentWeight'])}")
    sizes: Sizes = {"T": None, "N": None, "I": None, "H": None}
    shapes.bind(sizes, "H", shape_of["recurrentWeight"][-1])
    if sizes["H"] == 0:  # before any other label's shape is checked against H = 0
        raise ValueError(f"{op}: recurrentWeight: hidden size H must be positive")
    # Learn the remaining sizes from the first tensors that hold them.
    for label in ("source", "sourceGradient", "zState", *STATE_LABELS, "inputWeight"):
        if label not in shape_of:
            continue
        for layout in layouts(label, spec, bidirectional, has_w):
            if len(layout) == len(shape_of[label]):
                for dim, value in zip(layout, shape_of[label]):
                    if isinstance(dim, tuple) and dim[1] != "H":
                        shapes.bind(sizes, dim[1], value, dim[0])
                break
    for label, shape in shape_of.items():
        if label == "mask":
            D = 2 if bidirectional else 1
            shapes.check_broadcastable(op, label, shape, [(1, "T"), (1, "N"), (D, "H")], sizes)
        else:
            shapes.check(op, label, shape, layouts(label, spec, bidirectional, has_w), sizes)
    if has_w and sizes["I"] == 0:
        raise ValueError(f"{op}: source: input size I must be positive when inputWeight is given")
    return sizes


def normalise(op: str, arrays: RunArrays, sizes: Mapping[str, Any], bidirectional: bool,
              labels: Iterable[str] | None = None) -> RunArrays:
    """Run-time arrays in the dense layouts the core expects (SPEC.md section 1). A feed kept
    as a broadcast view (of a placeholder with dimensions unknown when the op was built) or
    a view op's result is made dense here, once its shape is checked; a MemoryError then
    names ``op`` and the label. ``labels``: the ones to look at (default: all; ``unsettled``
    gives them); the others' arrays are dense already."""
    T, N, H = sizes["T"], sizes["N"], sizes["H"]
    DH = (2 if bidirectional else 1) * H
    out: RunArrays = {} if labels is None else dict(arrays)
    label = ""
    try:  # (costs nothing until it catches, unlike a ``with`` per call)
        for label in arrays if labels is None else labels:
            array = arrays[label]
            # Feeds, constants and the recurrent ops' outputs are C-contiguous, but a view
            # op's result (a transpose, a slice) may not be: only such an array is copied.
            # (This runs for every input of every call, so the common case reads each
            # array's flags once.)
            if array is not None:
                if label in STATE_LABELS and array.shape != (N, DH):
                    array = array.reshape(N, DH)
                elif label == "peephole" and array.ndim != 1:
                    array = array.reshape(-1)
                elif label == "mask" and array.shape != (T, N, DH):
                    array = np.broadcast_to(array, (T, N, DH))
                if type(array) is not np.ndarray:
                    array = dense(array)
                else:
                    flags = array.flags
                    if not (flags.c_contiguous and flags.aligned):
                        array = dense(array)
            out[label] = array
    except MemoryError as error:
        raise MemoryError(f"{op}: {label}: out of memory: {error}") from None
    return out


def fully_known(tensors: dict[str, Tensor | None]) -> bool:
    return all(None not in t.shape for t in tensors.values() if t is not None)


def whole_mask(sizes: Mapping[str, Any], bidirectional: bool) -> tuple[int, ...] | None:
    """A mask's whole shape [T, N, D·H], where the sizes are known (else None)."""
    T, N, H = sizes["T"], sizes["N"], sizes["H"]
    if T is None or N is None or H is None:
        return None
    return (T, N, (2 if bidirectional else 1) * H)


def unsettled(tensors: Mapping[str, Tensor | None],
              whole_mask: tuple[int, ...] | None = None) -> list[str]:
    """The labels whose run-time arrays may not be in the core's dense layout yet, the only
    ones ``normalise`` needs to look at. Settled are absent inputs, and placeholders and
    constants of fully known shape in that layout: a run feeds a placeholder of known shape
    a dense array of exactly its shape (``Graph.run``), and a constant holds one dense copy.
    A mask is settled when its shape is ``whole_mask`` ([T, N, D·H], once known).
    (Skipping them saves 1.5 of a one-step GRU call's 9.3 µs: benchmarks/normalise_ab.py.)"""
    return [label for label, tensor in tensors.items()
            if tensor is not None and not _settled(label, tensor, whole_mask)]


def _settled(label: str, tensor: Tensor, whole_mask: tuple[int, ...] | None) -> bool:
    if tensor.op.kind not in ("placeholder", "constant") or None in tensor.shape:
        return False
    if label in STATE_LABELS:
        return len(tensor.shape) == 2  # not [1, N, D·H]
    if label == "peephole":
        return len(tensor.shape) == 1  # not [2, 4·H]
    return label != "mask" or tensor.shape == whole_mask  # else broadcast to [T, N, D·H]
