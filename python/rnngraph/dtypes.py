"""Data types: MPSGraph's ``MPSDataType`` for the two types rnngraph computes in."""

from __future__ import annotations

import contextlib
import enum
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Iterator

    from numpy.typing import ArrayLike, DTypeLike, NDArray


class DataType(enum.Enum):
    """A tensor's element type (``rg.float32`` or ``rg.float64``)."""

    float32 = "float32"
    float64 = "float64"

    numpy: np.dtype[Any]

    def __init__(self, value: str) -> None:
        self.numpy = np.dtype(value)  # the NumPy dtype (a plain attribute: read on every run)

    def __repr__(self) -> str:
        return f"rnngraph.{self.value}"


float32 = DataType.float32
float64 = DataType.float64


def as_data_type(value: DataType | DTypeLike, where: str) -> DataType:
    """Accept rg.float32/rg.float64, NumPy dtypes/types or their names."""
    if isinstance(value, DataType):
        return value
    if value is None:  # NumPy would read None as float64
        raise TypeError(f"{where}: expected rnngraph.float32 or rnngraph.float64, got None")
    try:
        dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"{where}: expected rnngraph.float32 or rnngraph.float64, got {value!r}") from None
    if dtype == np.float32:
        return DataType.float32
    if dtype == np.float64:
        return DataType.float64
    raise TypeError(f"{where}: expected rnngraph.float32 or rnngraph.float64, got {dtype}")


def dense(array: ArrayLike, dtype: DTypeLike | None = None) -> NDArray[Any]:
    """A C-contiguous, aligned array (copied only when needed); rank 0 stays rank 0."""
    if (type(array) is np.ndarray and (dtype is None or array.dtype == dtype)
            and array.flags.c_contiguous and array.flags.aligned):
        return array  # the common case, without np.require's overhead
    return np.require(array, dtype=dtype, requirements=["C", "A"])


def broadcast_view(array: NDArray[Any], dtype: DTypeLike) -> NDArray[Any]:
    """``array`` (a view with zero strides) as a read-only broadcast view of its distinct
    elements converted to ``dtype``: the conversion copies only those elements."""
    compact = array[tuple(slice(0, 1) if stride == 0 else slice(None)
                          for stride in array.strides)]
    return np.broadcast_to(dense(compact, dtype), array.shape)


@contextlib.contextmanager
def naming_memory_errors(where: str) -> Iterator[None]:
    """A MemoryError inside the block (NumPy's, converting or copying an array) is raised
    again naming ``where`` (the op or method and the label)."""
    try:
        yield
    except MemoryError as error:
        raise MemoryError(f"{where}: out of memory: {error}") from None
