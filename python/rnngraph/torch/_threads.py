"""How rnngraph's kernels share the CPU with torch when called through the adapter.

Two rules (docs/pytorch.md, "Threads"):

- **One pool.** When torch's intra-op backend is OpenMP (the CPU wheels'), rnngraph runs its
  parallel sections on torch's OpenMP threads instead of its own workers
  (``set_thread_pool("torch")``, the default). After each parallel op torch's threads keep
  spinning for a while; rnngraph's own workers would compete with them for the cores, while
  on torch's pool the two libraries take turns on the same threads.
- **One count.** Unless the user chose rnngraph's count (``rnngraph.set_num_threads`` or the
  ``RNNGRAPH_NUM_THREADS`` variable), each adapter call first sets it to
  ``torch.get_num_threads()``: ``torch.set_num_threads`` and
  ``threadpoolctl.threadpool_limits`` govern both libraries, and a limit on rnngraph alone
  holds inside its block.
"""

from __future__ import annotations

import os
import warnings
from typing import Literal

import torch

from rnngraph import config
from rnngraph._native import core as _core

Pool = Literal["torch", "rnngraph"]
OPENMP_RUNTIMES = ("libgomp", "libiomp", "libomp")


# The count follow_torch last set; at first, rnngraph's count when the adapter was imported.
_followed: int = _core.get_num_threads()


def follow_torch() -> None:
    """Apply the count rule before a call into rnngraph's kernels. A count that changed since
    the last call followed torch's was set by a limit on rnngraph alone
    (``threadpool_limits(1, user_api="rnngraph")``): it holds until the limit restores the
    count it found, and then torch's is followed again."""
    global _followed
    if config.num_threads_chosen():
        return
    current = _core.get_num_threads()
    if current != _followed:
        return
    wanted = torch.get_num_threads()
    if current != wanted:
        _core.set_num_threads(wanted)
    _followed = wanted


def torch_openmp_runtime() -> str | None:
    """The path of the OpenMP runtime torch's intra-op pool runs on, as loaded in this process;
    None if torch's backend is not OpenMP or the runtime is not found."""
    if "OpenMP" not in torch.__config__.parallel_info():
        return None
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:
        return None
    found = sorted(p for p in paths if os.path.basename(p).startswith(OPENMP_RUNTIMES))
    inside_torch = [p for p in found if os.path.dirname(torch.__file__) in p]
    candidates = inside_torch or found
    return candidates[0] if candidates else None


def set_thread_pool(pool: Pool) -> None:
    """Where rnngraph's parallel sections run: on torch's OpenMP threads (``"torch"``, the
    default where torch's backend is OpenMP) or on rnngraph's own workers (``"rnngraph"``).
    The setting is process-wide and applies to rnngraph's Graph calls too."""
    if pool == "rnngraph":
        _core._use_host_openmp("")
        return
    if pool != "torch":
        raise ValueError(f"set_thread_pool: expected 'torch' or 'rnngraph', got {pool!r}")
    runtime = torch_openmp_runtime()
    if runtime is None or not _core._use_host_openmp(runtime):
        raise RuntimeError("set_thread_pool: torch's intra-op backend is not an OpenMP runtime "
                           f"rnngraph can share ({torch.__config__.parallel_info().splitlines()[-1]})")


def get_thread_pool() -> Pool:
    """``"torch"`` when rnngraph's parallel sections run on torch's OpenMP threads."""
    return "torch" if _core._host_openmp() else "rnngraph"


def adopt_torch_pool() -> None:
    """The default at import: torch's pool where it can be shared, unless the environment
    says ``RNNGRAPH_TORCH_POOL=rnngraph``. Another value is ignored with a RuntimeWarning
    (as ``RNNGRAPH_NUM_THREADS`` is)."""
    choice = os.environ.get("RNNGRAPH_TORCH_POOL", "torch")
    if choice == "rnngraph":
        return
    if choice != "torch":
        warnings.warn(f"RNNGRAPH_TORCH_POOL={choice!r} is neither 'torch' nor 'rnngraph'; "
                      "ignored: rnngraph runs on torch's pool where it can be shared",
                      RuntimeWarning, stacklevel=2)
    runtime = torch_openmp_runtime()
    if runtime is not None:
        _core._use_host_openmp(runtime)
