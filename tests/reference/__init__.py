"""Independent NumPy test oracle for rnngraph (see SPEC.md sections 1-5).

``numpy_rnn`` holds slow loop implementations of the forward ops (which can
also return the pre-activations each activation sees); ``torch_mapping`` maps
torch.nn.RNN / LSTM / GRU parameters and gradients to the rnngraph layout;
``torch_gru`` is a differentiable torch GRU loop for every rnngraph option
(import it as ``reference.torch_gru``: it needs torch).
"""

from .numpy_rnn import ACTIVATION_NAMES, activation, gru, lstm, single_gate_rnn
from .torch_mapping import (
    gru_params_from_torch,
    lstm_params_from_torch,
    rnn_params_from_torch,
    state_from_torch,
    torch_grads_to_rnngraph,
)

__all__ = [
    "ACTIVATION_NAMES",
    "activation",
    "gru",
    "gru_params_from_torch",
    "lstm",
    "lstm_params_from_torch",
    "rnn_params_from_torch",
    "single_gate_rnn",
    "state_from_torch",
    "torch_grads_to_rnngraph",
]
