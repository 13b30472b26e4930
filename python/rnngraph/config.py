"""The linked BLAS and rnngraph's threads."""

from __future__ import annotations

import operator
import os
import warnings

import numpy as np

from rnngraph._native import core as _core
from rnngraph._native import supported_levels

MAX_THREADS = 4096  # the core's kMaxThreads (rnngraph/threads.hpp), as RNNGRAPH_NUM_THREADS
_chosen = False  # set_num_threads was called (see num_threads_chosen)
_environment: bool | None = None  # RNNGRAPH_NUM_THREADS is set (read once, as the core does)

# Cores of OpenBLAS's DYNAMIC_ARCH build that run AVX-512 kernels.
AVX512_CORES = ("SkylakeX", "Cooperlake", "SapphireRapids")


def blas_info() -> dict[str, str | int]:
    """``{'library', 'config', 'core', 'num_threads'}`` of the BLAS rnngraph calls.

    ``num_threads`` is the BLAS's own thread count, which rnngraph keeps at 1: rnngraph runs
    its own threads (``get_num_threads``) and calls the BLAS inside them.
    """
    return dict(_core.blas_info())


def kernel_level() -> str:
    """Instruction-set level of the running C++ core: 'avx512', 'avx2' or 'baseline'."""
    return str(_core.kernel_level)


def show_config() -> None:
    """Print the BLAS library, its version and build, the detected core, and the threads of
    rnngraph and of its BLAS."""
    info = blas_info()
    print(f"rnngraph BLAS library : {info['library']}")
    print(f"BLAS build            : {info['config']}")
    print(f"BLAS detected core    : {info['core']}")
    budget = cpu_budget()
    quota = f"{budget['quota']:g}" if budget["quota"] else "none"
    source = ("RNNGRAPH_NUM_THREADS" if budget["environment"]
              else f"CPUs this process may use: affinity {budget['affinity']}, cgroup quota {quota}")
    print(f"rnngraph threads      : {get_num_threads()}")
    print(f"rnngraph default now  : {budget['default']} threads ({source})")
    print(f"BLAS threads          : {info['num_threads']} (rnngraph calls it from its own threads)")
    print(f"rnngraph kernels      : {kernel_level()} (runnable here: "
          f"{', '.join(supported_levels())})")


def set_num_threads(n: int) -> None:
    """Set the threads rnngraph's kernels use (``n >= 1``); NumPy's BLAS is not touched."""
    try:  # a Python or NumPy integer, or any type that says it is one (not a bool)
        if isinstance(n, (bool, np.bool_)):
            raise TypeError
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"set_num_threads: expected an int, got {n!r}") from None
    if not 1 <= n <= MAX_THREADS:
        raise ValueError(f"set_num_threads: expected 1 <= n <= {MAX_THREADS}, got {n}")
    global _chosen
    _chosen = True
    _core.set_num_threads(n)


def num_threads_chosen() -> bool:
    """Whether the user chose rnngraph's thread count: ``set_num_threads`` was called or
    ``RNNGRAPH_NUM_THREADS`` is set. (The PyTorch adapter otherwise follows torch's count.)"""
    global _environment
    if _environment is None:
        _environment = bool(_core.cpu_budget()["environment"])
    return _chosen or _environment


def get_num_threads() -> int:
    """The threads rnngraph's kernels use. By default: ``RNNGRAPH_NUM_THREADS`` if set, else
    the CPUs this process may run on (its affinity mask: taskset, numactl, a container's
    cpuset), lowered to its cgroup's CPU quota rounded up (docker ``--cpus``, Kubernetes
    limits); see ``cpu_budget()``. ``threadpoolctl.threadpool_limits`` limits it too."""
    return int(_core.get_num_threads())


def cpu_budget() -> dict[str, int | float]:
    """What the default thread count is made of, read now: ``{'affinity': CPUs in the
    affinity mask, 'quota': the cgroup's CPU quota in CPUs (0: none), 'environment':
    RNNGRAPH_NUM_THREADS (0: unset), 'default': the default they give}``. The count in use
    (``get_num_threads()``) was worked out once, at the first call: an affinity mask or quota
    changed since then shows here, not there."""
    return dict(_core.cpu_budget())


def warn_if_environment_invalid() -> None:
    """At import: a ``RNNGRAPH_NUM_THREADS`` that is set but not an integer in 1..4096 (the
    core's reading, cpp/src/runtime/cpu_budget.cpp) is ignored, with a RuntimeWarning that
    says so, as libgomp does with a bad ``OMP_NUM_THREADS``."""
    text = os.environ.get("RNNGRAPH_NUM_THREADS")
    if text is not None and not _core.cpu_budget()["environment"]:
        warnings.warn(f"RNNGRAPH_NUM_THREADS={text!r} is not an integer from 1 to 4096; "
                      f"ignored: rnngraph uses {get_num_threads()} threads (the CPUs this "
                      "process may use)", RuntimeWarning, stacklevel=2)


def release_memory() -> None:
    """Return the memory rnngraph keeps between calls (workspace and the blocks of freed
    outputs, reused by the next call) to the system now. It does so by itself once it has
    been idle for a second; call this to have it at once."""
    _core.release_kept_memory()


def kept_memory() -> int:
    """Bytes rnngraph keeps now for its next call (0 after a second idle)."""
    return int(_core.kept_bytes())
