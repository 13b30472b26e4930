"""Pick the compiled core for this CPU.

The C++ core is built at three instruction-set levels, each in its own module: ``_core``
(baseline x86-64, runs anywhere), ``_core_avx2`` (x86-64-v3) and ``_core_avx512``
(x86-64-v4). ``core`` is the best one this CPU supports. ``RNNGRAPH_KERNELS=baseline|avx2|
avx512`` forces a level (an error if the CPU cannot run it).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING

from rnngraph import _core as baseline

LEVELS = ("avx512", "avx2")  # best first
VARIABLE = "RNNGRAPH_KERNELS"


def _available(level: str) -> bool:
    try:
        importlib.import_module(f"rnngraph._core_{level}")
    except ImportError:
        return False
    return True


def supported_levels() -> list[str]:
    """Kernel levels built into this install and runnable on this CPU, best first."""
    levels = [lvl for lvl in LEVELS if baseline.cpu_supports(lvl) and _available(lvl)]
    return levels + ["baseline"]


def load(level: str) -> ModuleType:
    """The compiled core of ``level`` ('baseline', 'avx2' or 'avx512')."""
    if level == "baseline":
        return baseline
    if level not in LEVELS:
        raise ValueError(f"{VARIABLE}: expected one of baseline, avx2, avx512, got {level!r}")
    if not baseline.cpu_supports(level):
        raise RuntimeError(f"{VARIABLE}={level}: this CPU cannot run {level} kernels")
    return importlib.import_module(f"rnngraph._core_{level}")


def _choose() -> ModuleType:
    forced = os.environ.get(VARIABLE)
    return load(forced) if forced else load(supported_levels()[0])


if TYPE_CHECKING:
    # Every level's module has _core's API (their stubs re-export _core's).
    from rnngraph import _core as core
else:
    core = _choose()

__all__ = ["LEVELS", "VARIABLE", "core", "load", "supported_levels"]
