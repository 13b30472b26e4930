"""A first end-to-end gradient check of the LSTM and the GRU through the public API, every
optional input given (the single gate's are cases of test_single_gate_rnn_gradients.py)."""

import pytest

from toolkit import Case, check_gradients, gradients, make_inputs, signals

SMOKE_CASES = [
    Case.parse(cell, text)
    for cell, text in (("LSTM", "fwd-h0-c0-peephole-mask"), ("LSTM", "bi-h0-c0-peephole-mask"),
                       ("GRU", "fwd-resetAfter-h0-b2-mask"), ("GRU", "bi-resetAfter-h0-b2-mask"))
]


@pytest.mark.parametrize("case", [pytest.param(c, id=f"{c.cell}-{c.id}") for c in SMOKE_CASES])
def test_gradients_match_finite_differences(case, rng):
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    check_gradients(case, x, sig, gradients(case, x, sig))
