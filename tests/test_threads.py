"""The multi-threaded paths give the single-threaded results: batch-row chunks of the
recurrence on their own threads, directions on their own threads, and large products cut
into blocks. Shapes are chosen above the thresholds that switch those paths on."""

import numpy as np
import pytest

import harness
import rnngraph as rg


@pytest.fixture
def threads():
    saved = rg.get_num_threads()
    yield
    rg.set_num_threads(saved)


CASES = [
    # cell, bidirectional, N: N >= 16 cuts the batch into chunks; bidirectional runs directions apart
    ("singleGateRNN", False, 32),
    ("LSTM", False, 32),
    ("LSTM", True, 17),
    ("GRU", False, 24),
    ("GRU", True, 16),
]


CASES += [("GRU", False, 24, True), ("GRU", True, 16, True)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(str(v) for v in c))
def test_threads_give_the_single_threaded_result(case, threads):
    cell, bidirectional, N = case[:3]
    resetAfter = len(case) > 3
    rng = np.random.default_rng(7)
    T, I, H = 9, 160, 64
    x = harness.make_inputs(cell, rng, T=T, N=N, I=I, H=H, bidirectional=bidirectional, mask=True,
                            peephole=True, secondaryBias=True, scale=0.3)
    props = {"bidirectional": bidirectional}
    if cell == "GRU":
        props["resetAfter"] = bool(resetAfter)
    desc = harness.descriptor(cell, **props)
    D = 2 if bidirectional else 1
    dy = rng.standard_normal((T, N, D * H))
    dS = rng.standard_normal((N, D * H))
    results = []
    for n in (1, 2):
        rg.set_num_threads(n)
        out = harness.forward(cell, x, desc)
        grads = harness.gradients(cell, x, desc, dy, dS)
        results.append((out, grads))
    (out1, grads1), (out2, grads2) = results
    for key in out1:
        np.testing.assert_allclose(out2[key], out1[key], rtol=1e-12, atol=1e-12, err_msg=key)
    assert list(grads1) == list(grads2)
    for key in grads1:
        np.testing.assert_allclose(grads2[key], grads1[key], rtol=1e-11, atol=1e-11, err_msg=key)


def test_set_num_threads_is_rnngraphs_own(threads):
    rg.set_num_threads(3)
    assert rg.get_num_threads() == 3
    assert rg.config.blas_info()["num_threads"] == 3
