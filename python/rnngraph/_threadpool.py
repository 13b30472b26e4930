"""rnngraph's thread pool, seen and limited by threadpoolctl (when it is installed).

``threadpoolctl.threadpool_info()`` lists rnngraph's compiled core as its own pool
(``user_api`` and ``internal_api`` "rnngraph"), and ``threadpool_limits(n)`` limits it inside
the block and restores the count afterwards. The controller finds the running core module
(``rnngraph._native.core``, one of ``_core``, ``_core_avx2``, ``_core_avx512``) by its file
name and calls its exported C functions ``rnngraph_get_num_threads`` and
``rnngraph_set_num_threads``. Without threadpoolctl nothing happens here.
"""

from __future__ import annotations

import os
from importlib import metadata

from rnngraph.config import MAX_THREADS  # (the core's C int)


def register() -> bool:
    """Register rnngraph's controller with threadpoolctl; False when threadpoolctl is
    missing or too old to take third-party controllers (it needs ``register``, 3.5+)."""
    try:
        import threadpoolctl  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return False
    if not hasattr(threadpoolctl, "register"):
        return False
    from rnngraph._native import core

    # Only the running core's module: "_core." matches _core.cpython-*.so alone, not
    # _core_avx512.cpython-*.so, which may be loaded too but is then not the one in use.
    module_prefix = os.path.basename(core.__file__).split(".")[0].lower() + "."

    class RNNGraphController(threadpoolctl.LibController):  # type: ignore[misc]
        user_api = "rnngraph"
        internal_api = "rnngraph"
        filename_prefixes = (module_prefix,)
        check_symbols = ("rnngraph_get_num_threads", "rnngraph_set_num_threads")

        def get_num_threads(self) -> int:
            return int(self.dynlib.rnngraph_get_num_threads())

        def set_num_threads(self, num_threads: int) -> None:
            # A limit is an upper bound: one past the core's int (ctypes would wrap it,
            # 2**40 to 0) means no limit, the core's largest count.
            self.dynlib.rnngraph_set_num_threads(min(int(num_threads), MAX_THREADS))

        def get_version(self) -> str | None:
            try:
                return metadata.version("rnngraph")
            except metadata.PackageNotFoundError:
                return None

    threadpoolctl.register(RNNGraphController)
    return True
