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


# (m, n, k, transpose A, transpose B, the limit). Only two sides can pass the limit while the
# leading dimensions stay within it: C's rows with op(A) = A, and k with op(A) = Aᵀ, op(B) = B
# (cut). Any other side brings a leading dimension past it (the small kernel).
PRODUCTS = [(301, 40, 50, False, False, 64), (301, 40, 50, False, True, 64),  # rows cut
            (40, 50, 301, True, False, 64), (33, 20, 1000, True, False, 100),  # k cut
            (40, 301, 50, False, False, 64), (120, 130, 140, True, True, 100),  # small kernel
            (97, 89, 83, False, True, 7)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("m", "n", "k", "ta", "tb", "cap"), PRODUCTS, ids=str)
def test_a_product_past_the_blas_sizes_is_cut_into_calls_that_fit(limit, rng, dtype, m, n, k,
                                                                 ta, tb, cap):
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    expected = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    whole = _matmul(a, b, ta, tb)
    limit(cap)
    cut = _matmul(a, b, ta, tb)
    rtol = 1e-12 if dtype == "float64" else 2e-5
    np.testing.assert_allclose(cut, expected, rtol=rtol, atol=rtol * np.sqrt(k))
    np.testing.assert_allclose(cut, whole, rtol=rtol, atol=rtol * np.sqrt(k))


@pytest.mark.parametrize("cell,text", [("LSTM", "fwd"), ("GRU", "fwd-resetAfter"),
                                       ("singleGateRNN", "fwd")])
def test_a_recurrent_op_past_the_blas_sizes_gives_the_same_results(limit, rng, cell, text):
    """Its input projection, dx and (k) dR and dW over T·N = 192 rows cut at 150, its step
    products (N = 24 rows, G·H up to 128) whole."""
    case = Case.parse(cell, text).but(T=8, N=24, I=40, H=32, signal="dy+dS").with_all_inputs()
    x = draw_inputs(case, rng, scale=0.3)
    sig = signals(case, rng)
    expected = forward(case, x), gradients(case, x, sig)
    limit(150)
    got = forward(case, x), gradients(case, x, sig)
    for want, have in zip(expected, got, strict=True):
        assert list(want) == list(have)
        for name in want:
            np.testing.assert_allclose(have[name], want[name], rtol=1e-12, atol=1e-12,
                                       err_msg=name)
