"""Small argument checks and array helpers the indexing and shape ops share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

if TYPE_CHECKING:
    from rnngraph.tensor import Tensor


def is_integer(value: object) -> TypeGuard[int | np.integer[Any]]:
    """A Python or NumPy integer, not a bool (NumPy's bool is not one of its integer types)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def integer_argument(op: str, label: str, value: object, minimum: int | None = None) -> int:
    """A Python or NumPy int (not a bool) at least ``minimum``, else an error naming the op
    and the label."""
    if not is_integer(value):
        raise TypeError(f"{op}: {label}: expected an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{op}: {label}: expected an int >= {minimum}, got {value}")
    return int(value)


def present(tensor: Tensor | None) -> Tensor:
    """A gradient rule's tensor that the backward walk guarantees (a gradient the rule is
    asked for, an input the op always has); typed Optional where the walk keeps them."""
    if tensor is None:
        raise AssertionError("a gradient rule got None where the walk promises a Tensor")
    return tensor


def naming(name: str | None) -> str:
    """What a run-time error adds after the label to name the op: `` ('name')`` for an op
    given a name (``reshape: shape ('flat'): ...``), nothing otherwise."""
    return f" ({name!r})" if name is not None else ""
