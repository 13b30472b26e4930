"""``torch.func.vmap`` over rnngraph's registered ops: the op once per element of the mapped
dimension, the results stacked along a new leading one. A recurrent cell gives nothing to
share between the elements (each may have its own weights), and one element is already a
batch of N sequences: to share one kernel call, fold the mapped dimension into N instead.
"""

from __future__ import annotations

from typing import Any

import torch


def per_element_rule(op: Any, name: str) -> Any:
    """A vmap rule (``torch.library.register_vmap``) that calls ``op`` per element."""

    def rule(info: Any, in_dims: tuple[int | None, ...], *args: Any,
             **kwargs: Any) -> tuple[Any, int]:
        if info.batch_size == 0:
            raise ValueError(f"{name}: vmap over an empty dimension (the op has no empty "
                             "result to stack; map over a non-empty one)")
        results = []
        for element in range(info.batch_size):
            sliced = [arg if dim is None else arg.select(dim, element)
                      for arg, dim in zip(args, in_dims)]
            results.append(op(*sliced, **kwargs))
        stacked = [torch.stack(parts) for parts in zip(*results)]
        return (tuple(stacked) if isinstance(results[0], tuple) else stacked), 0

    return rule
