"""The core's entry points for the ops around the recurrent ones: _core.matmul (rnngraph's
gemm for matrixMultiplication) and _core.adam_update (Graph.adam's fused step)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from graph_ops.helpers import numpy_adam
from rnngraph._native import core


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "shape", [(5, 3, 4), (1, 7, 1), (0, 3, 2), (4, 0, 3), (3, 2, 0), (300, 40, 70)], ids=str
)
def test_matmul_equals_numpy_for_dense_and_transposed_operands(dtype, shape, rng):
    m, k, n = shape
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


@pytest.mark.parametrize("amsgrad", [False, True], ids=["adam", "amsgrad"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_adam_equals_the_formula_at_every_thread_count(dtype, amsgrad, rng):
    import rnngraph as rg

    shape = (300, 257)  # several blocks of the fused pass
    x, m, g = (rng.standard_normal(shape).astype(dtype) for _ in range(3))
    v = rng.random(shape).astype(dtype)
    vmax = rng.random(shape).astype(dtype) if amsgrad else None
    hyper = [dtype(0.01), dtype(0.9), dtype(0.999), dtype(1e-8)]
    state = {"values": x, "momentum": m, "velocity": v}
    if amsgrad:
        state["maximumVelocity"] = vmax
    # the fused step is given the current rate: uncorrected, in x's dtype; its outputs are the
    # state's keys in order
    expected = list(numpy_adam(state, [g], *hyper, corrected=False, dtype=None)[0].values())
    before = rg.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            rg.set_num_threads(threads)
            results.append(core.adam_update(x, m, v, vmax, g, *map(float, hyper)))
    finally:
        rg.set_num_threads(before)
    rtol = 1e-6 if dtype == np.float32 else 1e-14
    for got, want in zip(results[0], expected):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)  # bit-identical for any thread count


def test_fused_adam_propagates_nan_like_numpy_and_refuses_other_layouts():
    x = np.zeros(4)
    vmax = np.array([np.nan, 1.0, 0.0, 0.0])
    g = np.array([0.0, 0.0, np.nan, 1.0])
    new = core.adam_update(x, x, x, vmax, g, 0.1, 0.9, 0.999, 1e-8)
    assert np.isnan(new[3][0]) and np.isnan(new[3][2]) and new[3][1] == 1.0
    with pytest.raises(ValueError, match=r"adam_update: momentum: expected shape \[4\], got \[5\]"):
        core.adam_update(x, np.zeros(5), x, None, x, 0.1, 0.9, 0.999, 1e-8)
    with pytest.raises(ValueError, match="adam_update: velocity: expected a C-contiguous"):
        core.adam_update(x, x, np.zeros(8)[::2], None, x, 0.1, 0.9, 0.999, 1e-8)
    with pytest.raises(TypeError, match="adam_update: gradient: expected dtype float64"):
        core.adam_update(x, x, x, None, np.zeros(4, np.float32), 0.1, 0.9, 0.999, 1e-8)
    with pytest.raises(TypeError, match="float32 or float64"):
        core.adam_update(np.zeros(4, np.int32), x, x, None, x, 0.1, 0.9, 0.999, 1e-8)


def test_arrays_that_went_through_pickle_are_accepted(rng):
    """An unpickled array's dtype equals float32 without being the same object (a feed from
    a worker process or a checkpoint): matmul and the fused Adam step take it like any."""
    a, b = (pickle.loads(pickle.dumps(rng.random(s, dtype=np.float32))) for s in ((3, 4), (4, 2)))
    np.testing.assert_allclose(core.matmul(a, b), a @ b, rtol=1e-6)
    x = pickle.loads(pickle.dumps(np.ones(4, np.float32)))
    new_values = core.adam_update(x, x * 0, x * 0, None, x, 0.1, 0.9, 0.999, 1e-8)[0]
    assert new_values.dtype == np.float32 and np.all(new_values < 1)
