"""``LSTM`` and ``LSTMGradients`` (SPEC.md sections 5 and 6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rnngraph._native import core as _core
from rnngraph.descriptors import LSTMDescriptor
from rnngraph.ops.recurrent import CellSpec, forward_op, gradient_op

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rnngraph._typing import GraphBuilder
    from rnngraph.tensor import Tensor

LSTM_CELL = CellSpec(
    options_type=_core.LSTMOptions,
    descriptor_type=LSTMDescriptor,
    gradient_required=("cellOutputFwd",),
    returned=("source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
              "initCell"),
    training_outputs=("h", "c", "zState"),
)


def _outputs(descriptor: LSTMDescriptor) -> list[str]:
    # SPEC.md section 5 (pinned): training always returns [h, c, zState].
    if descriptor.training:
        return list(LSTM_CELL.training_outputs)
    return ["h", "c"] if descriptor.produceCell else ["h"]


class LSTMOps:
    def LSTM(self: GraphBuilder, source: Tensor | NDArray[Any], *,
             recurrentWeight: Tensor | NDArray[Any],
             inputWeight: Tensor | NDArray[Any] | None = None,
             bias: Tensor | NDArray[Any] | None = None,
             initState: Tensor | NDArray[Any] | None = None,
             initCell: Tensor | NDArray[Any] | None = None,
             mask: Tensor | NDArray[Any] | None = None,
             peephole: Tensor | NDArray[Any] | None = None,
             descriptor: LSTMDescriptor | None = None,
             name: str | None = None) -> list[Tensor]:
        """LSTM with gates ``[i, f, z, o]`` (``[i, z, f, o]`` with ``forgetGateLast``).

        ``a_g = act_g(x'_g + (h[t-1] ⊙ m)·R_gᵀ + p_g ⊙ c[t-1])``,
        ``c = a_f ⊙ c[t-1] + a_i ⊙ a_z``, ``h = a_o ⊙ act(c)``.

        Args:
            source: ``[T, N, I]``; without ``inputWeight`` the projected ``[T, N, 4H]``
                (``[T, N, 8H]`` bidirectional).
            recurrentWeight: ``[4H, H]`` (``[2, 4H, H]``).
            inputWeight: ``[4H, I]`` (``[8H, I]``) or None.
            bias: ``[4H]`` (``[8H]``) or None.
            initState, initCell: ``[N, H]`` or ``[1, N, H]`` (``[N, 2H]``) or None.
            mask: broadcastable to ``[T, N, D·H]`` or None.
            peephole: ``[4H]`` (``[2, 4H]`` or ``[8H]``) or None.
            descriptor: ``LSTMDescriptor`` (None: defaults); copied.

        Returns:
            ``[h]``; ``[h, c]`` with ``produceCell``; ``[h, c, zState]`` with ``training``.
            h, c: ``[T, N, D·H]``; zState: activated gates ``[T, N, D·4H]``.
        """
        return forward_op(self, LSTM_CELL, {
            "source": source, "recurrentWeight": recurrentWeight, "inputWeight": inputWeight,
            "bias": bias, "initState": initState, "initCell": initCell, "mask": mask,
            "peephole": peephole,
        }, descriptor, name, _outputs)

    def LSTMGradients(self: GraphBuilder, source: Tensor | NDArray[Any], *,
                      recurrentWeight: Tensor | NDArray[Any],
                      sourceGradient: Tensor | NDArray[Any],
                      zState: Tensor | NDArray[Any],
                      cellOutputFwd: Tensor | NDArray[Any],
                      stateGradient: Tensor | NDArray[Any] | None = None,
                      cellGradient: Tensor | NDArray[Any] | None = None,
                      inputWeight: Tensor | NDArray[Any] | None = None,
                      bias: Tensor | NDArray[Any] | None = None,
                      initState: Tensor | NDArray[Any] | None = None,
                      initCell: Tensor | NDArray[Any] | None = None,
                      mask: Tensor | NDArray[Any] | None = None,
                      peephole: Tensor | NDArray[Any] | None = None,
                      descriptor: LSTMDescriptor | None = None,
                      name: str | None = None) -> list[Tensor]:
        """Gradients of ``LSTM`` from its saved ``zState`` and cell sequence.

        Args:
            sourceGradient: dL/dh for every step ``[T, N, D·H]``.
            zState: the forward op's third output ``[T, N, D·4H]``.
            cellOutputFwd: the forward op's second output ``[T, N, D·H]``.
            stateGradient, cellGradient: dL/d(final state), dL/d(final cell) ``[N, D·H]``
                or None; they enter at the last processed step of each direction.
            others: as given to the forward op.

        Returns:
            Gradients for ``source, recurrentWeight, inputWeight, bias, peephole, initState,
            initCell``, one per input given, each shaped like its input.
        """
        return gradient_op(self, LSTM_CELL, {
            "source": source, "recurrentWeight": recurrentWeight, "sourceGradient": sourceGradient,
            "zState": zState, "cellOutputFwd": cellOutputFwd, "stateGradient": stateGradient,
            "cellGradient": cellGradient, "inputWeight": inputWeight, "bias": bias,
            "initState": initState, "initCell": initCell, "mask": mask, "peephole": peephole,
        }, descriptor, name)
