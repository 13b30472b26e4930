"""How many threads rnngraph's kernels use when called through the PyTorch adapter.

Policy: unless the user chose rnngraph's count (``rnngraph.set_num_threads`` or the
``RNNGRAPH_NUM_THREADS`` variable), each adapter call first sets it to
``torch.get_num_threads()``. Torch's intra-op pool and rnngraph's threads then never ask for
more cores together than torch was given: they take turns (torch's layers, then rnngraph's
op), and ``torch.set_num_threads`` or ``threadpoolctl.threadpool_limits`` govern both.
"""

from __future__ import annotations

import torch

from rnngraph import config
from rnngraph._native import core as _core


def follow_torch() -> None:
    """Apply the policy before a call into rnngraph's kernels."""
    if config.num_threads_chosen():
        return
    wanted = torch.get_num_threads()
    if _core.get_num_threads() != wanted:
        _core.set_num_threads(wanted)
