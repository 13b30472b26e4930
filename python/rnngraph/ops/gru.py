"""``GRU`` and ``GRUGradients`` (SPEC.md sections 5 and 6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rnngraph._native import core as _core
from rnngraph.descriptors import GRUDescriptor
from rnngraph.ops.recurrent import CellSpec, forward_op, gradient_op

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rnngraph._typing import GraphBuilder
    from rnngraph.tensor import Tensor

GRU_CELL = CellSpec(
    options_type=_core.GRUOptions,
    descriptor_type=GRUDescriptor,
    gradient_required=("outputFwd",),
    returned=("source", "recurrentWeight", "inputWeight", "bias", "initState", "secondaryBias"),
    product_flag="resetAfter",
)


def _outputs(descriptor: GRUDescriptor) -> list[str]:
    return list(GRU_CELL.training_outputs) if descriptor.training else ["h"]


class GRUOps:
    def GRU(self: GraphBuilder, source: Tensor | NDArray[Any], *,
            recurrentWeight: Tensor | NDArray[Any],
            inputWeight: Tensor | NDArray[Any] | None = None,
            bias: Tensor | NDArray[Any] | None = None,
            initState: Tensor | NDArray[Any] | None = None,
            mask: Tensor | NDArray[Any] | None = None,
            secondaryBias: Tensor | NDArray[Any] | None = None,
            descriptor: GRUDescriptor | None = None,
            name: str | None = None) -> list[Tensor]:
        """GRU with gates ``[z, r, o]`` (``[r, z, o]`` with ``resetGateFirst``).

        ``z = act_z(x'_z + hm·R_zᵀ)``, ``r = act_r(x'_r + hm·R_rᵀ)``;
        ``o = act_o(x'_o + (hm ⊙ r)·R_oᵀ)``, or with ``resetAfter``
        ``o = act_o(x'_o + r ⊙ (hm·R_oᵀ + b2))``;
        ``h = z ⊙ h[t-1] + (1 − z) ⊙ o`` (``flipZ``: ``(1 − z) ⊙ h[t-1] + z ⊙ o``).

        Args:
            source: ``[T, N, I]``; without ``inputWeight`` the projected ``[T, N, 3H]``
                (``[T, N, 6H]`` bidirectional).
            recurrentWeight: ``[3H, H]`` (``[2, 3H, H]``).
            inputWeight: ``[3H, I]`` (``[6H, I]``) or None.
            bias: ``[3H]`` (``[6H]``) or None.
            initState: ``[N, H]`` or ``[1, N, H]`` (``[N, 2H]``) or None.
            mask: broadcastable to ``[T, N, D·H]`` or None.
            secondaryBias: b2 ``[H]`` (``[2H]``) or None; used only with ``resetAfter``.
            descriptor: ``GRUDescriptor`` (None: defaults); copied.

        Returns:
            ``[h]`` with h ``[T, N, D·H]``; with ``training`` ``[h, zState]``, zState =
            activated gates ``[T, N, D·3H]``.
        """
        return forward_op(self, GRU_CELL, {
            "source": source, "recurrentWeight": recurrentWeight, "inputWeight": inputWeight,
            "bias": bias, "initState": initState, "mask": mask, "secondaryBias": secondaryBias,
        }, descriptor, name, _outputs)

    def GRUGradients(self: GraphBuilder, source: Tensor | NDArray[Any], *,
                     recurrentWeight: Tensor | NDArray[Any],
                     sourceGradient: Tensor | NDArray[Any],
                     zState: Tensor | NDArray[Any],
                     outputFwd: Tensor | NDArray[Any],
                     stateGradient: Tensor | NDArray[Any] | None = None,
                     inputWeight: Tensor | NDArray[Any] | None = None,
                     bias: Tensor | NDArray[Any] | None = None,
                     initState: Tensor | NDArray[Any] | None = None,
                     mask: Tensor | NDArray[Any] | None = None,
                     secondaryBias: Tensor | NDArray[Any] | None = None,
                     descriptor: GRUDescriptor | None = None,
                     name: str | None = None) -> list[Tensor]:
        """Gradients of ``GRU`` from its saved ``zState`` and output sequence.

        Args:
            sourceGradient: dL/dh for every step ``[T, N, D·H]``.
            zState: the forward op's second output ``[T, N, D·3H]``.
            outputFwd: the forward op's first output ``[T, N, D·H]``.
            stateGradient: dL/d(final state) ``[N, D·H]`` or None.
            others: as given to the forward op.

        Returns:
            Gradients for ``source, recurrentWeight, inputWeight, bias, initState,
            secondaryBias``, one per input given, each shaped like its input (secondaryBias's
            is zero without ``resetAfter``).
        """
        return gradient_op(self, GRU_CELL, {
            "source": source, "recurrentWeight": recurrentWeight, "sourceGradient": sourceGradient,
            "zState": zState, "outputFwd": outputFwd, "stateGradient": stateGradient,
            "inputWeight": inputWeight, "bias": bias, "initState": initState, "mask": mask,
            "secondaryBias": secondaryBias,
        }, descriptor, name)
