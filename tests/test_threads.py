"""The multi-threaded paths give the single-threaded results: batch-row chunks of the
recurrence on their own threads, directions on their own threads, and large products cut
into blocks. Shapes are chosen above the thresholds that switch those paths on."""

import multiprocessing

import numpy as np
import pytest

import rnngraph as rg
from toolkit import (
    Case,
    assert_all_close,
    assert_close,
    blas_threads,
    draw_inputs,
    forward,
    gradients,
    reference,
    signals,
)

I = 160
# cell, case id (direction and flags), N, H, T; every input given, cotangents dy and dS
SHAPES = [
    # N >= 16 and weights up to 8 MiB: the batch is cut into row chunks
    ("singleGateRNN", "fwd", 32, 64, 9),
    ("LSTM", "fwd", 32, 64, 9),
    ("GRU", "fwd", 24, 64, 9),
    ("GRU", "fwd-resetAfter", 24, 64, 9),
    # bidirectional: the two directions run on their own threads
    ("LSTM", "bi", 17, 64, 9),
    ("GRU", "bi", 16, 64, 9),
    ("GRU", "bi-resetAfter", 16, 64, 9),
    # a small batch, or weights over 8 MiB (float64 LSTM, H = 520): the threads share each step
    ("singleGateRNN", "fwd", 3, 256, 12),
    ("LSTM", "fwd", 6, 128, 12),
    ("LSTM", "fwd", 16, 520, 2),
    ("GRU", "fwd", 5, 128, 12),
    ("GRU", "fwd-resetAfter", 5, 128, 12),
    # hidden sizes that leave the packed weight panels partly padding
    ("GRU", "fwd", 20, 75, 5),
    ("LSTM", "fwd", 5, 75, 9),
    ("singleGateRNN", "bi", 16, 37, 4),
]
CASES = [Case.parse(cell, text).but(T=T, N=N, I=I, H=H, signal="dy+dS").with_all_inputs()
         for cell, text, N, H, T in SHAPES]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.cell}-{c.id}" for c in CASES])
def test_threads_give_the_single_threaded_result(case, rng):
    x = draw_inputs(case, rng, scale=0.3)
    sig = signals(case, rng)
    results = []
    for n in (1, 2):
        with blas_threads(n):
            results.append((forward(case, x), gradients(case, x, sig)))
    (out1, grads1), (out2, grads2) = results
    assert_close(out2["h"], reference(case, x)["h"], "float64_medium", f"{case.id} h")
    assert_all_close(out2, out1, "float64", f"{case.id} 2 threads against 1")
    assert list(grads1) == list(grads2) == list(case.returned)
    assert_all_close(grads2, grads1, "float64_medium", f"{case.id} gradients, 2 threads")


def test_set_num_threads_is_rnngraphs_own():
    with blas_threads(3):
        assert rg.get_num_threads() == 3
        assert rg.config.blas_info()["num_threads"] == 1  # its BLAS runs inside rnngraph's


def test_a_forked_child_runs_threaded_calls(rng):
    """After a threaded call, a forked child (multiprocessing's default on Linux) gets a
    worker pool of its own instead of the parent's, whose threads it does not have."""
    case = Case("LSTM", initState="[N,DH]", initCell="[N,DH]", T=9, N=6, I=I, H=128)
    x = draw_inputs(case, rng)
    with blas_threads(2):
        expected = forward(case, x)["h"]  # N < 16: the threads share each step
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_forward_in_child, args=(queue, case, x))
        child.start()
        child.join(60)
    assert child.exitcode == 0, "the forked child did not finish"
    assert_close(queue.get(timeout=5), expected, "float64", "the child's h")


def _forward_in_child(queue, case, x):
    queue.put(forward(case, x)["h"])


def test_set_num_threads_takes_any_integer_and_refuses_the_rest():
    """A NumPy integer is a count; a bool, a float or a count outside [1, 2^31 - 1] raises a
    Python error naming the function (the core's int would overflow past 2^31 - 1)."""
    before = rg.get_num_threads()
    try:
        rg.set_num_threads(np.int64(3))
        assert rg.get_num_threads() == 3
        for bad, error in ((True, TypeError), (2.0, TypeError), ("2", TypeError),
                           (0, ValueError), (-1, ValueError), (2**31, ValueError),
                           (np.uint64(2**63), ValueError)):
            with pytest.raises(error, match="^set_num_threads: expected"):
                rg.set_num_threads(bad)
        assert rg.get_num_threads() == 3  # nothing changed by the refused calls
    finally:
        rg.set_num_threads(before)
