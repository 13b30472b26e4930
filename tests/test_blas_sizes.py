"""Products larger than the BLAS's int32 sizes (2^31 - 1: scipy-openblas32) are cut until each
call's m, n and k fit, and a product whose operands' rows are longer than that runs on the
small kernel (cpp/src/gemm.cpp). Sizes that large need operands of 8 GiB and more, so these
tests lower the limit (core._set_blas_dimension_limit) and check that every cut computes the
same product."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from rnngraph._native import core
from toolkit import Case, draw_inputs, forward, gradients, signals


@pytest.fixture
def limit():
    def set_limit(value: int) -> None:
        core._set_blas_dimension_limit(value)

    yield set_limit
    core._set_blas_dimension_limit(0)


def _matmul(a, b, ta, tb):
    g = rg.Graph()
    dtype = rg.float64 if a.dtype == np.float64 else rg.float32
    pa, pb = (g.placeholder(shape=v.shape, dataType=dtype) for v in (a, b))
    product = g.matrixMultiplication(
        primary=g.transposeTensor(pa, dimension=0, withDimension=1) if ta else pa,
        secondary=g.transposeTensor(pb, dimension=0, withDimension=1) if tb else pb)
    return g.run(feeds={pa: a, pb: b}, targetTensors=[product])[product]


# (m, n, k, the limit): each of m, n, k the largest side past the limit, two or three sides
# past it, and a limit below the leading dimensions (the small kernel).
PRODUCTS = [(301, 40, 50, 64), (40, 301, 50, 64), (40, 50, 301, 64), (300, 200, 100, 45),
            (97, 89, 83, 7), (120, 130, 140, 100)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transposes", [(False, False), (True, False), (False, True),
                                        (True, True)], ids=str)
@pytest.mark.parametrize(("m", "n", "k", "cap"), PRODUCTS, ids=str)
def test_a_product_past_the_blas_sizes_is_cut_into_calls_that_fit(limit, rng, dtype,
                                                                 transposes, m, n, k, cap):
    ta, tb = transposes
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    expected = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    whole = _matmul(a, b, ta, tb)
    limit(cap)
    cut = _matmul(a, b, ta, tb)
    rtol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(cut, expected, rtol=rtol, atol=rtol * np.sqrt(k))
    np.testing.assert_allclose(cut, whole, rtol=rtol, atol=rtol * np.sqrt(k))


@pytest.mark.parametrize("cell,text", [("LSTM", "fwd"), ("GRU", "bi-resetAfter"),
                                       ("singleGateRNN", "fwd")])
def test_a_recurrent_op_past_the_blas_sizes_gives_the_same_results(limit, rng, cell, text):
    """Its input projection and weight gradients (T·N = 96 rows) cut, its step products
    (N = 24 rows) whole."""
    case = Case.parse(cell, text).but(T=4, N=24, I=40, H=32, signal="dy+dS").with_all_inputs()
    x = draw_inputs(case, rng, scale=0.3)
    sig = signals(case, rng)
    expected = forward(case, x), gradients(case, x, sig)
    limit(50)
    got = forward(case, x), gradients(case, x, sig)
    for want, have in zip(expected, got, strict=True):
        assert list(want) == list(have)
        for name in want:
            np.testing.assert_allclose(have[name], want[name], rtol=1e-12, atol=1e-12,
                                       err_msg=name)
