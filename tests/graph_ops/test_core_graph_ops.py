"""The core's entry points for the ops around the recurrent ones: _core.matmul (rnngraph's
gemm for matrixMultiplication) and _core.kept_empty (arrays on the kept memory)."""

from __future__ import annotations

import numpy as np
import pytest

from rnngraph._native import core


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(5, 3, 4), (1, 7, 1), (0, 3, 2), (4, 0, 3), (3, 2, 0),
                                   (300, 40, 70)], ids=str)
def test_matmul_equals_numpy_for_dense_and_transposed_operands(dtype, shape):
    m, k, n = shape
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for x in (a, np.ascontiguousarray(a.T).T):  # dense, and a transposed view
        for y in (b, np.ascontiguousarray(b.T).T):
            result = core.matmul(x, y)
            assert result.dtype == dtype and result.shape == (m, n)
            np.testing.assert_allclose(result, x @ y, rtol=rtol, atol=rtol * max(k, 1))


def test_matmul_refuses_what_it_cannot_read():
    with pytest.raises(TypeError, match="differ in dtype"):
        core.matmul(np.ones((2, 3), np.float32), np.ones((3, 2)))
    with pytest.raises(TypeError, match="float32 or float64"):
        core.matmul(np.ones((2, 3), np.int32), np.ones((3, 2), np.int32))
    with pytest.raises(ValueError, match="a: expected rank 2"):
        core.matmul(np.ones((2, 2, 3)), np.ones((3, 2)))
    with pytest.raises(ValueError, match="b: not a dense or transposed matrix"):
        core.matmul(np.ones((2, 3)), np.ones((3, 4))[:, ::2])
    with pytest.raises(ValueError, match="inner sizes differ"):
        core.matmul(np.ones((2, 3)), np.ones((4, 2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_kept_empty_gives_writable_aligned_arrays(dtype):
    array = core.kept_empty((3, 1 << 17), np.dtype(dtype))
    assert array.shape == (3, 1 << 17) and array.dtype == dtype and array.flags.writeable
    assert array.ctypes.data % 64 == 0
    array[:] = 7
    assert (array == 7).all()
    assert core.kept_empty((0, 4), np.dtype(dtype)).shape == (0, 4)


def test_kept_empty_refuses_bad_arguments():
    with pytest.raises(ValueError, match="negative size"):
        core.kept_empty((2, -1), np.dtype(np.float32))
    with pytest.raises(TypeError, match="expected float32"):
        core.kept_empty((2,), np.dtype(np.complex64))
