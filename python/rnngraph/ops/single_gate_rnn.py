"""``singleGateRNN`` and ``singleGateRNNGradients`` (SPEC.md sections 5 and 6)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rnngraph._native import core as _core
from rnngraph.descriptors import SingleGateRNNDescriptor
from rnngraph.ops.recurrent import CellSpec, forward_op, gradient_op

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from rnngraph._typing import GraphBuilder
    from rnngraph.tensor import Tensor

SINGLE_GATE_RNN = CellSpec(
    options_type=_core.SingleGateRNNOptions,
    descriptor_type=SingleGateRNNDescriptor,
    gradient_required=(),
    returned=("source", "recurrentWeight", "inputWeight", "bias", "initState"),
)


def _outputs(descriptor: SingleGateRNNDescriptor) -> list[str]:
    return list(SINGLE_GATE_RNN.training_outputs) if descriptor.training else ["h"]


class SingleGateRNNOps:
    def singleGateRNN(self: GraphBuilder, source: Tensor | NDArray[Any], *,
                      recurrentWeight: Tensor | NDArray[Any],
                      inputWeight: Tensor | NDArray[Any] | None = None,
                      bias: Tensor | NDArray[Any] | None = None,
                      initState: Tensor | NDArray[Any] | None = None,
                      mask: Tensor | NDArray[Any] | None = None,
                      descriptor: SingleGateRNNDescriptor | None = None,
                      name: str | None = None) -> list[Tensor]:
        """Single-gate RNN: ``z[t] = x[t]·Wᵀ + b + (h[t-1] ⊙ m[t])·Rᵀ``, ``h[t] = act(z[t])``.

        Args:
            source: ``[T, N, I]``; without ``inputWeight`` the projected ``[T, N, H]``
                (``[T, N, 2H]`` bidirectional).
            recurrentWeight: ``[H, H]`` (``[2, H, H]`` bidirectional).
            inputWeight: ``[H, I]`` (``[2H, I]``) or None (source already projected).
            bias: ``[H]`` (``[2H]``) or None (zeros).
            initState: ``[N, H]`` or ``[1, N, H]`` (``[N, 2H]``) or None (zeros).
            mask: broadcastable to ``[T, N, H]`` (``[T, N, 2H]``) or None (ones).
            descriptor: ``SingleGateRNNDescriptor`` (None: defaults); copied.
            name: op name.

        Returns:
            ``[h]`` with h ``[T, N, H]`` (``[T, N, 2H]``); with ``training`` ``[h, zState]``,
            zState = pre-activation z ``[T, N, H]`` (``[T, N, 2H]``).
        """
        return forward_op(self, SINGLE_GATE_RNN, {
            "source": source, "recurrentWeight": recurrentWeight, "inputWeight": inputWeight,
            "bias": bias, "initState": initState, "mask": mask,
        }, descriptor, name, _outputs)

    def singleGateRNNGradients(self: GraphBuilder, source: Tensor | NDArray[Any], *,
                               recurrentWeight: Tensor | NDArray[Any],
                               sourceGradient: Tensor | NDArray[Any],
                               zState: Tensor | NDArray[Any],
                               stateGradient: Tensor | NDArray[Any] | None = None,
                               inputWeight: Tensor | NDArray[Any] | None = None,
                               bias: Tensor | NDArray[Any] | None = None,
                               initState: Tensor | NDArray[Any] | None = None,
                               mask: Tensor | NDArray[Any] | None = None,
                               descriptor: SingleGateRNNDescriptor | None = None,
                               name: str | None = None) -> list[Tensor]:
        """Gradients of ``singleGateRNN`` from its saved ``zState``.

        Args:
            source, recurrentWeight, inputWeight, bias, initState, mask, descriptor: as given
                to the forward op.
            sourceGradient: dL/dh for every step, ``[T, N, D·H]``.
            zState: the forward op's training output ``[T, N, D·H]``.
            stateGradient: dL/d(final state of each direction) ``[N, D·H]`` or None.

        Returns:
            Gradients for ``source, recurrentWeight, inputWeight, bias, initState`` in that
            order, one per input given, each shaped like its input.
        """
        return gradient_op(self, SINGLE_GATE_RNN, {
            "source": source, "recurrentWeight": recurrentWeight, "sourceGradient": sourceGradient,
            "zState": zState, "stateGradient": stateGradient, "inputWeight": inputWeight,
            "bias": bias, "initState": initState, "mask": mask,
        }, descriptor, name)
