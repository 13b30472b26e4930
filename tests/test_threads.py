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


# cell, bidirectional, N, H, T, resetAfter
CASES = [
    # N >= 16 and weights up to 8 MiB: the batch is cut into row chunks
    ("singleGateRNN", False, 32, 64, 9, False),
    ("LSTM", False, 32, 64, 9, False),
    ("GRU", False, 24, 64, 9, False),
    ("GRU", False, 24, 64, 9, True),
    # bidirectional: the two directions run on their own threads
    ("LSTM", True, 17, 64, 9, False),
    ("GRU", True, 16, 64, 9, False),
    ("GRU", True, 16, 64, 9, True),
    # a small batch, or weights over 8 MiB (float64 LSTM, H = 520): the threads share each step
    ("singleGateRNN", False, 3, 256, 12, False),
    ("LSTM", False, 6, 128, 12, False),
    ("LSTM", False, 16, 520, 2, False),
    ("GRU", False, 5, 128, 12, False),
    ("GRU", False, 5, 128, 12, True),
    # hidden sizes that leave the packed weight panels partly padding
    ("GRU", False, 20, 75, 5, False),
    ("LSTM", False, 5, 75, 9, False),
    ("singleGateRNN", True, 16, 37, 4, False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "{}-{}-N{}-H{}-T{}-{}".format(
    c[0], "bi" if c[1] else "uni", c[2], c[3], c[4], "after" if c[5] else "before"))
def test_threads_give_the_single_threaded_result(case, threads):
    cell, bidirectional, N, H, T, resetAfter = case
    rng = np.random.default_rng(7)
    I = 160
    x = harness.make_inputs(cell, rng, T=T, N=N, I=I, H=H, bidirectional=bidirectional, mask=True,
                            peephole=True, secondaryBias=True, scale=0.3)
    props = {"bidirectional": bidirectional}
    if cell == "GRU":
        props["resetAfter"] = resetAfter
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
    reference = harness.reference_forward(cell, x, desc)
    np.testing.assert_allclose(out2["h"], reference["h"], rtol=1e-11, atol=1e-11)
    for key in out1:
        np.testing.assert_allclose(out2[key], out1[key], rtol=1e-12, atol=1e-12, err_msg=key)
    assert list(grads1) == list(grads2)
    for key in grads1:
        np.testing.assert_allclose(grads2[key], grads1[key], rtol=1e-11, atol=1e-11, err_msg=key)


def test_set_num_threads_is_rnngraphs_own(threads):
    rg.set_num_threads(3)
    assert rg.get_num_threads() == 3
    assert rg.config.blas_info()["num_threads"] == 1  # its BLAS runs inside rnngraph's threads


def test_a_forked_child_runs_threaded_calls(threads):
    """After a threaded call, a forked child (multiprocessing's default on Linux) gets a
    worker pool of its own instead of the parent's, whose threads it does not have."""
    import multiprocessing

    rg.set_num_threads(2)
    rng = np.random.default_rng(3)
    x = harness.make_inputs("LSTM", rng, T=9, N=6, I=160, H=128)
    desc = harness.descriptor("LSTM")
    expected = harness.forward("LSTM", x, desc)["h"]  # N < 16: the threads share each step

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_forward_in_child, args=(queue, x))
    child.start()
    child.join(60)
    assert child.exitcode == 0, "the forked child did not finish"
    np.testing.assert_allclose(queue.get(timeout=5), expected, rtol=1e-12, atol=1e-14)


def _forward_in_child(queue, x):
    queue.put(harness.forward("LSTM", x, harness.descriptor("LSTM"))["h"])
