"""Initial and final states between torch.nn's layout, ``[D, N, H]``, and the ops' layout,
``[N, D·H]`` (SPEC.md section 1: the directions' H columns side by side). The core writes
the final states in torch.nn's layout (``rnn_forward(..., final_states=True)``).

``to_op`` and ``to_torch`` serve tensors (the registered ops' path, where autograd records
each view) and NumPy arrays (the modules' eager path, inside one autograd.Function, where a
view costs no autograd node) alike."""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

State = TypeVar("State")  # a torch.Tensor or a NumPy array


def to_op(state: State, D: int, N: int, H: int) -> State:
    """``[D, N, H]`` (unbatched ``[D, H]``, N = 1) as ``[N, D·H]``: a view when D = 1, a
    copy when D = 2."""
    s: Any = state
    if D == 1:
        return s.reshape(N, H)  # type: ignore[no-any-return]
    return s.reshape(D, N, H).swapaxes(0, 1).reshape(N, D * H)  # type: ignore[no-any-return]


def to_torch(state: State, D: int, N: int, H: int) -> State:
    """``[N, D·H]`` as a dense ``[D, N, H]``."""
    s: Any = state
    if D == 1:
        return s.reshape(1, N, H)  # type: ignore[no-any-return]
    swapped = s.reshape(N, D, H).swapaxes(0, 1)
    dense: Any = (np.ascontiguousarray(swapped) if isinstance(s, np.ndarray)
                  else swapped.contiguous())
    return dense  # type: ignore[no-any-return]
