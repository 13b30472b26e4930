"""The sgemm ceiling (and the dgemm one, for the float64 rows): 2048³ through rnngraph's own
OpenBLAS (not NumPy's), via ctypes.

rnngraph loads the scipy-openblas32 library at import; opening the same path again returns
that same loaded library, so this measures exactly the BLAS and thread pool rnngraph calls.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import numpy as np
from timing import measure

from rnngraph import _blas  # importing rnngraph loads the library with its CPU detection

ROW_MAJOR, NO_TRANS = 101, 111


def _library():
    lib = ctypes.CDLL(str(_blas.library_path()), mode=ctypes.RTLD_GLOBAL)
    i, f, p = ctypes.c_int, ctypes.c_float, ctypes.c_void_p
    lib.scipy_cblas_sgemm.argtypes = [i, i, i, i, i, i, f, p, i, p, i, f, p, i]
    lib.scipy_cblas_sgemm.restype = None
    d = ctypes.c_double
    lib.scipy_cblas_dgemm.argtypes = [i, i, i, i, i, i, d, p, i, p, i, d, p, i]
    lib.scipy_cblas_dgemm.restype = None
    lib.scipy_openblas_set_num_threads.argtypes = [i]
    lib.scipy_openblas_get_config.restype = ctypes.c_char_p
    lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
    return lib


def blas_identity() -> dict:
    lib = _library()
    return {"path": str(_blas.library_path()),
            "config": lib.scipy_openblas_get_config().decode(),
            "core": lib.scipy_openblas_get_corename().decode()}


def sgemm_ceiling(threads: int, n: int = 2048, budget_s: float = 2.0, min_reps: int = 10,
                  settle: Callable[[float], dict] | None = None, dgemm: bool = False) -> dict:
    """GFLOP/s of C = A·B (n×n, float32) on ``threads`` OpenBLAS threads (with ``dgemm``, also
    float64's, under "dgemm"). rnngraph keeps its OpenBLAS single-threaded (it runs its own
    threads), so the count is restored to 1 after. ``settle``: the settle check before each
    measurement (timing.measure)."""
    lib = _library()
    lib.scipy_openblas_set_num_threads(threads)
    try:
        out = _measure(lib, np.float32, threads, n, budget_s, min_reps, settle)
        if dgemm:
            out["dgemm"] = _measure(lib, np.float64, threads, n, budget_s, min_reps, settle)
        return out
    finally:
        lib.scipy_openblas_set_num_threads(1)


def _measure(lib, dtype, threads, n, budget_s, min_reps, settle) -> dict:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))
    c = np.zeros((n, n), dtype)
    gemm = lib.scipy_cblas_sgemm if dtype == np.float32 else lib.scipy_cblas_dgemm

    def step():
        gemm(ROW_MAJOR, NO_TRANS, NO_TRANS, n, n, n, 1.0, a.ctypes.data, n, b.ctypes.data, n, 0.0,
             c.ctypes.data, n)

    result = measure(step, budget_s=budget_s, min_reps=min_reps, settle=settle)
    assert np.allclose(c[:4, :4], a[:4] @ b[:, :4], rtol=1e-3, atol=1e-2), "gemm gave wrong C"
    flop = 2.0 * n ** 3
    return {**result, "n": n, "threads": threads, "gflops": flop / result["median_ms"] / 1e6,
            "gflops_best": flop / result["min_ms"] / 1e6}
