"""Tensors across the torch/NumPy boundary without copies: a contiguous CPU tensor is read
through a NumPy view of its memory (``Tensor.numpy()``), and rnngraph's results become
tensors over the arrays the core wrote (``torch.from_numpy``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from numpy.typing import NDArray

FLOATS = (torch.float32, torch.float64)


def check_tensor(where: str, tensor: object, dtype: torch.dtype | None = None,
                 meta: bool = False) -> torch.Tensor:
    """``tensor`` if it is a dense CPU tensor of float32 or float64 (of ``dtype`` if given),
    or with ``meta`` a meta tensor (shapes only: the op's fake kernel answers it); else a
    TypeError or ValueError naming ``where``."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{where}: expected a torch.Tensor, got {type(tensor).__name__}")
    if not (tensor.is_cpu or (meta and tensor.is_meta)):
        raise ValueError(f"{where}: expected a CPU tensor, got one on device {tensor.device} "
                         "(rnngraph computes on the CPU: move it with .cpu())")
    return check_kind(where, tensor, dtype)


def check_kind(where: str, tensor: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """``check_tensor`` without the device: a dense tensor of float32 or float64 (of
    ``dtype`` if given), on any device (the fake kernels see meta tensors too). Not dense:
    another layout (sparse, MKL-DNN), a nested tensor (strided, but ragged) or a quantized
    one."""
    if tensor.layout != torch.strided or tensor.is_nested or tensor.is_quantized:
        kind = ("a nested tensor" if tensor.is_nested
                else f"a quantized tensor ({tensor.dtype})" if tensor.is_quantized
                else f"layout {tensor.layout}")
        raise TypeError(f"{where}: expected a dense (strided) tensor of float32 or float64, "
                        f"got {kind}")
    if tensor.dtype not in FLOATS:
        raise TypeError(f"{where}: expected torch.float32 or torch.float64, got {tensor.dtype}")
    if dtype is not None and tensor.dtype != dtype:
        raise TypeError(f"{where}: expected {dtype} like the other inputs, got {tensor.dtype}")
    return tensor


def as_array(where: str, tensor: torch.Tensor, dtype: torch.dtype) -> NDArray[Any]:
    """A NumPy view of ``tensor``'s memory, with its strides (a tensor with the negative bit
    is resolved into a copy first). ``numpy(force=True)`` detaches in one call."""
    check_tensor(where, tensor, dtype)
    return tensor.numpy(force=True)


def as_tensor(array: NDArray[Any]) -> torch.Tensor:
    """A tensor over ``array``'s memory."""
    return torch.from_numpy(array)
