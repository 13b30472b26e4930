"""What a run of a Graph does, worked out once for its targets (``Plan``), and doing it
(``Plan.execute``): shared by ``Graph.run`` and ``Executable.run``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Container

    from numpy.typing import NDArray

    from rnngraph.graph import Operation
    from rnngraph.tensor import Tensor


class Plan:
    """The ops a run evaluates, in order: the placeholders it needs fed, the constants it
    reads, and each computing op with the intermediates to free after it."""

    def __init__(self, needed: list[Operation], targets: tuple[Tensor, ...]) -> None:
        self.placeholders = [op.outputs[0] for op in needed if op.kind == "placeholder"]
        self.constants = {op.outputs[0]: op.attrs["value"] for op in needed if op.kind == "constant"}
        computing = [op for op in needed if op.kind not in ("placeholder", "constant")]
        freed = self._last_uses(computing, targets)
        self.steps = [(op, tuple(freed.get(position, ()))) for position, op in enumerate(computing)]
        # Targets made by a view op (operands.VIEW), and placeholders (whose value is the
        # caller's feed): returned as copies of their own.
        self.copied = [t for t in dict.fromkeys(targets)
                       if t.op.attrs.get("view") or t.op.kind == "placeholder"]

    def check_fed(self, fed: Container[Tensor], where: str) -> None:
        """Raise ValueError naming the first placeholder the run needs that ``fed`` lacks."""
        for placeholder in self.placeholders:
            if placeholder not in fed:
                raise ValueError(f"{where}: placeholder {placeholder.op.name!r} needs a feed")

    @staticmethod
    def _last_uses(ops: list[Operation], targets: tuple[Tensor, ...]) -> dict[int, list[Tensor]]:
        """{position: intermediates whose last reader is the op at that position}."""
        keep = set(targets)
        last: dict[Tensor, int] = {}
        for position, op in enumerate(ops):
            for t in op.inputs.values():
                if t is not None and t not in keep and t.op.kind not in ("placeholder", "constant"):
                    last[t] = position
        freed: dict[int, list[Tensor]] = {}
        for tensor, position in last.items():
            freed.setdefault(position, []).append(tensor)
        return freed

    def execute(self, values: dict[Tensor, NDArray[Any]], targets: tuple[Tensor, ...],
                assigns: tuple[Tensor, ...]) -> list[NDArray[Any]]:
        """Run the plan on ``values``, the placeholders' checked feeds (a dict this takes
        over); returns the targets' arrays, in order. Every read sees the variables' values
        from before the run; the assigns (their new values' tensors) take effect together
        when it ends."""
        values.update(self.constants)
        for op, freed in self.steps:
            try:
                results = op.compute({label: (None if t is None else values[t])  # type: ignore[misc]
                                      for label, t in op.inputs.items()})  # (computing ops have one)
            except MemoryError as error:  # named after the op, unless it named itself
                if str(error).startswith(op.kind):
                    raise
                raise MemoryError(f"{op.kind} ({op.name!r}): out of memory: {error}") from None
            for tensor, result in zip(op.outputs, results):  # (NumPy gives rank-0 math scalars)
                values[tensor] = result if isinstance(result, np.ndarray) else np.asarray(result)
            for tensor in freed:  # intermediates past their last use
                del values[tensor]
        for assigned in assigns:  # together, after every read of the run
            assigned.op.attrs["value"].array = values[assigned]
        for t in self.copied:  # a view op's result or a placeholder's feed: a dense copy, not
            # to alias a feed, variable or result
            values[t] = values[t].copy()
        return [guarded(values[t]) for t in targets]


def guarded(array: NDArray[Any]) -> NDArray[Any]:
    """A result as the caller gets it: a read-only array that owns its data (a constant's
    value, or an optimizer's result an assign kept for its variable) as a view, which NumPy
    will not let anyone set writeable again; any other result as it is."""
    if array.base is None and not array.flags.writeable:
        return array.view()
    return array
