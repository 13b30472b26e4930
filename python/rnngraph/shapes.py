"""Shape checking against symbolic layouts such as ``[2, 4H, H]``.

A layout is a list of dimensions; each is an int (a literal size) or a ``(coefficient,
symbol)`` pair meaning ``coefficient * symbol`` for a symbol among T, N, I, H. The same
check runs at graph-build time (where ``None`` dimensions are skipped) and again at run time
with the real shapes, and its error names the op and the Swift label:
``LSTM: recurrentWeight: expected shape [4H, H] = [512, 128], got [512, 64]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeAlias

import numpy as np

Dim: TypeAlias = int | tuple[int, str]
Layout: TypeAlias = Sequence[Dim]
Sizes: TypeAlias = dict[str, int | None]  # symbol -> size, None while unknown
Dims: TypeAlias = Sequence[int | None]  # a shape; None: unknown until run time


def _dim_text(dim: Dim) -> str:
    if isinstance(dim, int):
        return str(dim)
    coefficient, symbol = dim
    return symbol if coefficient == 1 else f"{coefficient}{symbol}"


def _dim_value(dim: Dim, sizes: Sizes) -> int | None:
    if isinstance(dim, int):
        return dim
    coefficient, symbol = dim
    value = sizes.get(symbol)
    return None if value is None else coefficient * value


def shape_text(values: Dims) -> str:
    """``[2, ?, 3]``: a shape as errors print it (``?``: known only at run time)."""
    return "[" + ", ".join("?" if v is None else str(v) for v in values) + "]"


def larger_than_any_array(values: Iterable[int | None], itemsize: int) -> bool:
    """Whether no array of this shape can exist, whatever sizes its ``None`` dimensions get:
    NumPy refuses a shape whose non-zero sizes times ``itemsize`` pass the largest intp, even
    with a size of zero beside them."""
    limit, nbytes = int(np.iinfo(np.intp).max), itemsize
    for v in values:
        if v:  # None (at least 1 when fed) and 0 (skipped by NumPy's own check) add nothing
            nbytes *= v
            if nbytes > limit:
                return True
    return False


def refuse_unaddressable(shape: Dims, itemsize: int, where: str) -> None:
    """MemoryError "``where`` [shape]: more bytes than any array can hold" for a shape no
    array can have (``larger_than_any_array``): refused when it is declared, as a run
    raises MemoryError for an output too large to allocate."""
    if larger_than_any_array(shape, itemsize):
        raise MemoryError(f"{where} {shape_text(shape)}: more bytes than any array can hold")


def compatible(a: Dims, b: Dims) -> bool:
    """Whether ``a`` and ``b`` can be the same shape: one rank, equal where both are known."""
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def broadcastable(shape: Dims, target: Dims) -> bool:
    """Whether ``shape`` broadcasts to ``target`` without changing it (NumPy's rule: each
    trailing dimension 1 or equal), or may once unknown (None) dimensions are known."""
    return len(shape) <= len(target) and all(
        d is None or t is None or d == 1 or d == t
        for d, t in zip(reversed(shape), reversed(target)))


def layout_text(layout: Layout, sizes: Sizes) -> str:
    """``[4H, H] = [512, 128]`` (or just the symbols while sizes are unknown)."""
    symbolic = "[" + ", ".join(_dim_text(d) for d in layout) + "]"
    values = [_dim_value(d, sizes) for d in layout]
    if all(isinstance(d, int) for d in layout) or all(v is None for v in values):
        return symbolic
    return f"{symbolic} = {shape_text(values)}"


def matches(shape: Dims, layout: Layout, sizes: Sizes) -> bool:
    if len(shape) != len(layout):
        return False
    for actual, dim in zip(shape, layout):
        expected = _dim_value(dim, sizes)
        if actual is not None and expected is not None and actual != expected:
            return False
    return True


def check(op: str, label: str, shape: Dims, layouts: Sequence[Layout], sizes: Sizes) -> Layout:
    """Return the first layout ``shape`` fits; raise ValueError naming op and label if none."""
    for layout in layouts:
        if matches(shape, layout, sizes):
            return layout
    expected = " or ".join(layout_text(layout, sizes) for layout in layouts)
    raise ValueError(f"{op}: {label}: expected shape {expected}, got {shape_text(shape)}")


def bind(sizes: Sizes, symbol: str, value: int | None, coefficient: int = 1) -> None:
    """Learn ``symbol`` from a dimension equal to ``coefficient * symbol`` if still unknown."""
    if value is None or sizes.get(symbol) is not None:
        return
    if value % coefficient == 0:
        sizes[symbol] = value // coefficient


def check_broadcastable(op: str, label: str, shape: Dims, target: Layout, sizes: Sizes) -> None:
    """NumPy broadcasting of ``shape`` to ``target`` (each dimension 1 or equal)."""
    if not broadcastable(shape, [_dim_value(d, sizes) for d in target]):
        raise ValueError(
            f"{op}: {label}: expected a shape broadcastable to {layout_text(target, sizes)}, "
            f"got {shape_text(shape)}"
        )
