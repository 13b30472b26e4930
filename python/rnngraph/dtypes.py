"""Data types: MPSGraph's ``MPSDataType`` for the types rnngraph computes in.

The recurrent ops compute in float32 and float64. The ops around them (indices for
``gather`` and ``oneHot``, ``cast``) also take int32 and int64."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import numpy as np

from rnngraph._native import core

if TYPE_CHECKING:
    from types import TracebackType

    from numpy.typing import ArrayLike, DTypeLike, NDArray


class DataType(enum.Enum):
    """A tensor's element type: ``rg.float32``, ``rg.float64``, ``rg.int32`` or ``rg.int64``."""

    float32 = "float32"
    float64 = "float64"
    int32 = "int32"
    int64 = "int64"

    numpy: np.dtype[Any]

    def __init__(self, value: str) -> None:
        self.numpy = np.dtype(value)  # the NumPy dtype (a plain attribute: read on every run)

    def __repr__(self) -> str:
        return f"rnngraph.{self.value}"

    @property
    def is_float(self) -> bool:
        """float32 or float64: the types that carry gradients."""
        return self.numpy.kind == "f"


float32 = DataType.float32
float64 = DataType.float64
int32 = DataType.int32
int64 = DataType.int64
_ANY_TYPE = "rnngraph.float32, float64, int32 or int64"


def as_data_type(value: DataType | DTypeLike, where: str) -> DataType:
    """Accept a DataType, a NumPy dtype or type, or its name."""
    if value is None:  # NumPy would read None as float64
        raise TypeError(f"{where}: expected {_ANY_TYPE}, got None")
    if isinstance(value, DataType):
        return value
    try:
        dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"{where}: expected {_ANY_TYPE}, got {value!r}") from None
    if dtype.name not in DataType.__members__:
        raise TypeError(f"{where}: expected {_ANY_TYPE}, got {dtype}")
    return DataType[dtype.name]


def default_data_type(dtype: np.dtype[Any]) -> DataType:
    """The dataType an array of ``dtype`` gets where none is given (a constant, an op's
    array source): float64 for a float of 8 bytes or more in either byte order (float64,
    big-endian float64, long double), float32 for any other dtype."""
    return DataType.float64 if dtype.kind == "f" and dtype.itemsize >= 8 else DataType.float32


def loses_precision(array: NDArray[Any], target: np.dtype[Any]) -> bool:
    """Whether converting ``array`` (of real numbers) to the float dtype ``target`` can lose
    precision: from a float dtype wider than ``target`` (float64 into float32, long double
    into float64) whatever its values, or from integers some of which lie beyond those
    ``target`` holds exactly (±2**24 for float32, ±2**53 for float64). Small integers such
    as counts and labels convert exactly."""
    if array.dtype.kind == "f":
        return not np.can_cast(array.dtype, target)
    limit = 2 ** exact_integer_bits(target)
    info = np.iinfo(array.dtype)
    return (max(info.max, -info.min) > limit and array.size > 0
            and max(int(array.max()), -int(array.min())) > limit)


def exact_integer_bits(target: np.dtype[Any]) -> int:
    """Every integer up to 2**bits is exact in the float dtype ``target``."""
    return int(np.finfo(target).nmant) + 1


def check_integers(array: NDArray[Any], dtype: DataType, where: str, kind: str) -> None:
    """For an integer ``dtype`` (a ``kind`` such as placeholder or constant): ``array`` must
    hold integers, all in the type's range. NumPy's conversion would truncate floats and
    wrap integers around instead (2**40 as int32 is 0)."""
    if dtype.is_float:
        return
    if array.dtype.kind == "f":
        raise TypeError(f"{where}: expected integers for an {dtype.value} {kind}, got {array.dtype}")
    if array.size and not np.can_cast(array.dtype, dtype.numpy):
        limits = np.iinfo(dtype.numpy)
        if array.min() < limits.min or array.max() > limits.max:
            raise ValueError(f"{where}: values outside the range of {dtype.value}")


def _check_copy_fits(array: ArrayLike, dtype: DTypeLike | None) -> None:
    """A MemoryError before a copy of an array (a broadcast view, say) that needs more bytes
    than this process can still get, by the check rnngraph's own blocks of 64 MiB or more
    pass (the core's ``_memory_short_of``: rnngraph/memory.hpp). Where the kernel overcommits,
    NumPy's allocation of it would succeed and the copy be killed by the OOM killer (and a
    sanitizer's allocator aborts)."""
    if not isinstance(array, np.ndarray):
        return
    need = array.size * np.dtype(array.dtype if dtype is None else dtype).itemsize
    left = core._memory_short_of(min(need, 2**63))  # (the core takes a size_t)
    if left:
        raise MemoryError(f"a dense copy of {list(array.shape)} needs {need} bytes "
                          f"({_mib(need)}), more than the {_mib(left)} this process can still "
                          "get")


def _mib(size: int) -> str:
    """A byte count in MiB, rounded up, as the core's AllocationError writes it."""
    return f"{-(-size >> 20)} MiB"


def frozen_copy(array: ArrayLike, dtype: np.dtype[Any], where: str) -> NDArray[Any]:
    """One dense, read-only copy of ``array`` as ``dtype``; a memory error names ``where``."""
    with naming_memory_errors(where):
        _check_copy_fits(array, dtype)
        copy = np.array(array, dtype=dtype, order="C")
    copy.setflags(write=False)
    return copy


def dense(array: ArrayLike, dtype: DTypeLike | None = None) -> NDArray[Any]:
    """A C-contiguous, aligned array (copied only when needed, and refused with a MemoryError
    when the copy cannot fit in memory); rank 0 stays rank 0."""
    if (type(array) is np.ndarray and (dtype is None or array.dtype == dtype)
            and array.flags.c_contiguous and array.flags.aligned):
        return array  # the common case, without np.require's overhead
    _check_copy_fits(array, dtype)
    return np.require(array, dtype=dtype, requirements=["C", "A"])


def broadcast_view(array: NDArray[Any], dtype: DTypeLike) -> NDArray[Any]:
    """``array`` (a view with zero strides) as a read-only broadcast view of its distinct
    elements converted to ``dtype``: the conversion copies only those elements."""
    compact = array[tuple(slice(0, 1) if stride == 0 else slice(None)
                          for stride in array.strides)]
    return np.broadcast_to(dense(compact, dtype), array.shape)


class naming_memory_errors:
    """A MemoryError inside the block (NumPy's, converting or copying an array) is raised
    again naming ``where`` (the op or method and the label).

    A class rather than ``contextlib.contextmanager``: it wraps every op of every run, and
    a generator-based manager costs 2.7 µs a use against 0.3 µs for this one (timeit, AMD
    EPYC Zen 3), a tenth of a one-step GRU call's whole time."""

    __slots__ = ("where",)

    def __init__(self, where: str) -> None:
        self.where = where

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if kind is not None and issubclass(kind, MemoryError):
            raise MemoryError(f"{self.where}: out of memory: {error}") from None
