"""A first end-to-end gradient check per cell through the public API."""

import numpy as np
import pytest

import gradcheck
import harness


@pytest.mark.parametrize("cell", ["singleGateRNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_gradients_match_finite_differences(cell, bidirectional, rng):
    H = 2
    x = harness.make_inputs(cell, rng, H=H, bidirectional=bidirectional, mask=True, peephole=True,
                            secondaryBias=True)
    desc = harness.descriptor(cell, bidirectional=bidirectional)
    if cell == "GRU":
        desc.resetAfter = True
    D = 2 if bidirectional else 1
    T, N = x["source"].shape[:2]
    dy = rng.standard_normal((T, N, D * H))
    dS = rng.standard_normal((N, D * H))
    dC = rng.standard_normal((N, D * H)) if cell == "LSTM" else None
    analytic = harness.gradients(cell, x, desc, dy, dS, dC)
    differentiable = {k: v for k, v in x.items() if k != "mask"}
    for use_reference in (False, True):
        loss = harness.loss_function(cell, desc, H, dy, dS, dC, use_reference=use_reference)
        numeric = gradcheck.numerical_gradients(lambda a: loss({**x, **a}), differentiable)
        gradcheck.assert_gradients_close(analytic, numeric, f"{cell} bi={bidirectional}")
    assert np.all(np.isfinite(analytic["source"]))
