"""Results are bit-identical whatever the thread count: every parallel path cuts its work
into pieces that do not depend on how many threads claim them, and no piece's arithmetic
depends on which thread runs it. Counts above the machine's cores (oversubscription) are
fine for checking this."""

import ctypes

import numpy as np
import pytest

from toolkit import Case, blas_threads, draw_inputs, forward, gradients, signals

THREAD_COUNTS = (1, 2, 3, 4, 7, 16)
# cell, case text, N, I, H, T: every split path (serial, row chunks, directions on their
# own threads, a team sharing each step) and every cut of a product (gemm_parallel.cpp), in both
# dtypes, every input given
SHAPES = [
    ("LSTM", "fwd", 32, 96, 64, 7),  # row chunks
    ("GRU", "bi-resetAfter", 20, 64, 48, 5),  # directions and row chunks
    ("singleGateRNN", "bi", 16, 40, 37, 4),  # padded weight panels
    ("LSTM", "fwd", 3, 128, 256, 6),  # a team shares each step
    ("GRU", "fwd", 1, 64, 192, 8),  # a team, one batch row
    # one batch row: a team step is one phase, each thread's units (team_loops.hpp); an item
    # sweeps its panels of every gate as one sequence, so a register tile may span two gates
    # (packed_gemm_units; with AVX-512 2 panels a gate at 4 threads, uneven runs at 7, 1 at 16)
    ("LSTM", "fwd-float32", 1, 64, 512, 5),
    ("GRU", "fwd-resetAfter", 1, 48, 384, 4),
    ("singleGateRNN", "fwd", 1, 32, 640, 4),
    ("GRU", "fwd-resetAfter", 5, 64, 128, 6),
    ("singleGateRNN", "fwd", 2, 96, 256, 9),
    ("LSTM", "fwd-float32", 4, 256, 512, 5),  # float32 team: the packed product
    # teams whose items read hm and dQ in place (a few panels each, kCopyRowsMinPanels),
    # in tiles of 6 (AVX2) or 12 (AVX-512) rows and a short last one
    ("LSTM", "fwd-float32", 13, 64, 256, 5),
    ("GRU", "fwd-resetAfter", 9, 32, 160, 4),
    ("singleGateRNN", "fwd-float32", 14, 48, 320, 6),
    ("GRU", "bi-float32", 24, 128, 96, 5),
    ("LSTM", "fwd", 64, 512, 256, 8),  # weight gradients cut into a grid of blocks and along k
    # R beyond kStreamedWeightBytes (8.2 MiB) with as many 8-row chunks as threads: a team
    # at 7 threads, row chunks at 2-4 (work_split.hpp, choose_split)
    ("GRU", "fwd-resetAfter", 56, 32, 600, 3),
    # a call of one step: one phase by units up to kSingleStepUnitRows rows
    ("LSTM", "fwd-float32", 10, 64, 512, 1),
    ("GRU", "fwd-resetAfter-float32", 8, 48, 384, 1),
]
CASES = [Case.parse(cell, text).but(T=T, N=N, I=I, H=H, signal="dy+dS").with_all_inputs()
         for cell, text, N, I, H, T in SHAPES]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.cell}-{c.id}" for c in CASES])
def test_every_thread_count_gives_the_same_bits(case, rng):
    x = draw_inputs(case, rng, scale=0.3)
    sig = signals(case, rng)
    results = {}
    for n in THREAD_COUNTS:
        with blas_threads(n):
            results[n] = (forward(case, x), gradients(case, x, sig))
    out1, grads1 = results[1]
    for n in THREAD_COUNTS[1:]:
        out, grads = results[n]
        assert list(out) == list(out1) and list(grads) == list(grads1)
        for name in (*out, *grads):
            mine = out[name] if name in out else grads[name]
            theirs = out1[name] if name in out1 else grads1[name]
            assert np.array_equal(mine, theirs), f"{case.id}: {name} differs at {n} threads"


def test_the_callers_rounding_mode_applies_to_every_thread(rng):
    """Workers run under the calling thread's floating-point state: with rounding upward
    set by the caller, any thread count still gives the same bits (and not the bits of
    rounding to nearest)."""
    libc = ctypes.CDLL(None)
    fe_upward = 0x800  # x86-64 glibc's FE_UPWARD
    case = CASES[3]  # a team shares each step
    x = draw_inputs(case, rng, scale=0.3)
    with blas_threads(4):  # the workers start (or run) under rounding to nearest
        nearest = forward(case, x)["h"]
    assert libc.fesetround(fe_upward) == 0
    try:
        results = {}
        for n in (1, 4):
            with blas_threads(n):
                results[n] = forward(case, x)["h"]
    finally:
        libc.fesetround(0)  # FE_TONEAREST
    assert np.array_equal(results[4], results[1])
    assert not np.array_equal(results[1], nearest), "rounding upward changed nothing"


# m, n, k of products the BLAS computes in blocks (gemm_parallel.cpp): blocks of one part of k
# that one thread claims together run as one call, so 1 thread sums each element in a
# rectangle as large as the whole product (or its part of k) and 16 threads in single blocks.
# Odd sides leave uneven blocks; a deep k is cut into parts (split-k), a thin C into 128-wide
# blocks.
PRODUCTS = [(400, 2048, 512), (2048, 512, 400), (400, 512, 2048), (1500, 500, 1120),
            (1023, 769, 301), (128, 4096, 64), (4096, 200, 3000), (333, 333, 9000)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transposes", [(False, False), (True, False), (False, True)])
def test_products_give_the_same_bits_for_every_thread_count(dtype, transposes, rng):
    import rnngraph as rg

    for m, n, k in PRODUCTS:
        ta, tb = transposes
        a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
        b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
        g = rg.Graph()
        pa, pb = (g.placeholder(shape=v.shape, dataType=getattr(rg, dtype)) for v in (a, b))
        product = g.matrixMultiplication(
            primary=g.transposeTensor(pa, dimension=0, withDimension=1) if ta else pa,
            secondary=g.transposeTensor(pb, dimension=0, withDimension=1) if tb else pb,
        )
        results = {}
        for count in (1, 2, 3, 16):
            with blas_threads(count):
                results[count] = g.run(feeds={pa: a, pb: b}, targetTensors=[product])[product]
        for count in (2, 3, 16):
            assert np.array_equal(results[count], results[1]), f"{m}x{n}x{k} at {count} threads"
        # and the product itself: float32 rounding grows like sqrt(k) · 6e-8 · |values|
        expected = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
        bound = (1e-6 if dtype == "float64" else 1e-3) * np.sqrt(k) * np.abs(expected).max()
        assert np.max(np.abs(results[1] - expected)) <= bound, f"{m}x{n}x{k} is wrong"
