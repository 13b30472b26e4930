"""rnngraph's cells for PyTorch: custom ops with autograd, and ``nn.Module``s.

``import rnngraph.torch`` registers ``torch.ops.rnngraph.single_gate_rnn``, ``lstm`` and
``gru`` (and their gradient ops), and provides the modules ``SingleGateRNN``, ``LSTM`` and
``GRU``. ``import rnngraph`` alone never imports torch; install it with
``pip install "rnngraph[torch]"``. See docs/pytorch.md.
"""

from __future__ import annotations

try:
    import torch as _torch  # noqa: F401
except ImportError as error:  # pragma: no cover (the test extra installs torch)
    raise ImportError("rnngraph.torch needs PyTorch: pip install \"rnngraph[torch]\"") from error

from rnngraph.torch import _ops  # noqa: F401  (registers torch.ops.rnngraph.*)
from rnngraph.torch._modules import GRU, LSTM, SingleGateRNN
from rnngraph.torch._threads import adopt_torch_pool, get_thread_pool, set_thread_pool

adopt_torch_pool()

__all__ = ["GRU", "LSTM", "SingleGateRNN", "get_thread_pool", "set_thread_pool"]
