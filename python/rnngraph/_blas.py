"""Load rnngraph's own OpenBLAS before the compiled core, with its own CPU detection.

rnngraph links the ``scipy-openblas32`` wheel (a current DYNAMIC_ARCH OpenBLAS whose symbols
carry a ``scipy_`` prefix, so it never clashes with NumPy's or SciPy's copy). OpenBLAS picks
its kernels once, when the library is loaded, and lets ``OPENBLAS_CORETYPE`` override the
choice. That variable is often set process-wide to work around old OpenBLAS builds that
misdetect new CPUs; honouring it here would pin this current build to slower kernels. So the
library is loaded with ``OPENBLAS_CORETYPE`` hidden, unless ``RNNGRAPH_OPENBLAS_CORETYPE``
names a core explicitly. Nothing else in the process is affected: other libraries have
already read the variable or read it later, unchanged.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CORETYPE_VARIABLE = "OPENBLAS_CORETYPE"
OVERRIDE_VARIABLE = "RNNGRAPH_OPENBLAS_CORETYPE"


def library_path() -> Path:
    import scipy_openblas32  # importing it loads the library: only inside load()

    library: str = scipy_openblas32.get_library(fullname=True)
    return Path(scipy_openblas32.get_lib_dir()) / library


@contextmanager
def _coretype_for_rnngraph() -> Iterator[None]:
    saved = os.environ.get(CORETYPE_VARIABLE)
    override = os.environ.get(OVERRIDE_VARIABLE)
    try:
        if override:
            os.environ[CORETYPE_VARIABLE] = override
        else:
            os.environ.pop(CORETYPE_VARIABLE, None)
        yield
    finally:
        if saved is None:
            os.environ.pop(CORETYPE_VARIABLE, None)
        else:
            os.environ[CORETYPE_VARIABLE] = saved


def load() -> ctypes.CDLL:
    """Load the OpenBLAS library (once per process); the core then binds to it by soname."""
    with _coretype_for_rnngraph():
        return ctypes.CDLL(str(library_path()), mode=ctypes.RTLD_GLOBAL)
