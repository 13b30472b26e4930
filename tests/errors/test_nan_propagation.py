"""NaN propagation: a NaN in the source, a weight or the sourceGradient reaches exactly the
values that depend on it (in SPEC section 4's processing order), and no activation turns a
NaN into a number."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit import ACTIVATIONS, CELLS, Case, Signals, draw_inputs, forward, gradients, signals

# The initial states each cell takes, as case-id tokens: non-zero, so R acts at step 0 too.
STATES = {"singleGateRNN": "h0", "LSTM": "h0-c0", "GRU": "h0"}
T_NAN, N_NAN = 2, 1  # where the NaN goes, in T = 5 steps of N = 3 rows


def _cases(*pairs):
    """pytest parameters of (cell, case id) pairs, each id checked to be canonical."""
    params = [pytest.param(Case.parse(cell, text), id=f"{cell}-{text}") for cell, text in pairs]
    assert all(f"{p.values[0].cell}-{p.values[0].id}" == p.id for p in params)
    return params


NAN_CASES = _cases(
    *[(c, f"{d}-{STATES[c]}-T5-N3") for c in CELLS for d in ("fwd", "reverse", "bi")],
    *[("singleGateRNN", f"fwd-act={a}-h0-T5-N3") for a in ACTIVATIONS if a != "relu"],
    ("LSTM", "fwd-act=relu-h0-c0-T5-N3"), ("GRU", "reverse-o=hardSigmoid-h0-T5-N3"))


@pytest.mark.parametrize("case", NAN_CASES)
def test_nan_in_source_propagates_forward_in_processing_order_only(case, rng):
    x = draw_inputs(case, rng)
    x["source"][T_NAN, N_NAN, 1] = np.nan
    h = forward(case, x)["h"]
    others = [n for n in range(case.N) if n != N_NAN]
    assert np.all(np.isfinite(h[:, others])), "NaN leaked into another batch row"
    H = case.H
    if case.bidirectional:
        halves = [("fwd", slice(0, H)), ("rev", slice(H, 2 * H))]
    else:
        halves = [("rev" if case.reverse else "fwd", slice(0, H))]
    for order, cols in halves:
        row = h[:, N_NAN, cols]
        if order == "fwd":  # t_nan and every later step are NaN, earlier steps are not
            assert np.all(np.isnan(row[T_NAN:])) and np.all(np.isfinite(row[:T_NAN]))
        else:  # reverse: t_nan and every earlier step
            assert np.all(np.isnan(row[:T_NAN + 1])) and np.all(np.isfinite(row[T_NAN + 1:]))


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_activation_of_nan_is_nan(activation):
    """relu(NaN) and hardSigmoid(NaN) must not clamp NaN to a number (no std::max)."""
    for dtype in ("float64", "float32"):  # T = N = 1, H = 2, no inputWeight: z = source
        case = Case("singleGateRNN", activations={"activation": activation},
                    inputWeight=False, bias=False, T=1, N=1, dtype=dtype)
        x = {"source": np.array([[[np.nan, 1.0]]], dtype),
             "recurrentWeight": np.zeros((2, 2), dtype)}
        out = forward(case, x)
        assert np.isnan(out["h"][0, 0, 0]) and np.isnan(out["zState"][0, 0, 0])
        assert np.isfinite(out["h"][0, 0, 1])


@pytest.mark.parametrize("label", ["recurrentWeight", "inputWeight", "bias"])
@pytest.mark.parametrize("cell", CELLS)
def test_nan_in_a_weight_gives_nan_outputs(cell, label, rng):
    """One NaN weight: every output from the second step on is NaN (the NaN state feeds
    every unit through R); initState is non-zero so R touches step 0 too."""
    case = Case.parse(cell, f"fwd-{STATES[cell]}-T4")
    x = draw_inputs(case, rng)
    x[label].flat[0] = np.nan
    h = forward(case, x)["h"]
    assert np.all(np.isnan(h[1:]))
    assert np.any(np.isnan(h[0]))


BACKWARD = _cases(("singleGateRNN", "fwd-act=tanh-h0-dy-T5-N3"),  # relu' = 0 would
                  ("LSTM", "fwd-h0-c0-peephole-dy-T5-N3"),  # (rightly) stop the NaN
                  ("GRU", "fwd-h0-dy-T5-N3"))


@pytest.mark.parametrize("case", BACKWARD)
def test_nan_in_source_gradient_propagates_backward_in_time(case, rng):
    """dL/dh NaN at step t (forward direction) reaches dsource at t and earlier only, and the
    weight gradients (sums over all steps)."""
    x = draw_inputs(case, rng)
    dy = signals(case, rng).dy
    dy[T_NAN, N_NAN, 0] = np.nan
    grads = gradients(case, x, Signals(dy))
    ds, others = grads["source"], [n for n in range(case.N) if n != N_NAN]
    assert np.all(np.isnan(ds[:T_NAN + 1, N_NAN]))
    assert np.all(np.isfinite(ds[T_NAN + 1:])) and np.all(np.isfinite(ds[:, others]))
    assert np.all(np.isnan(grads["initState"][N_NAN]))
    assert np.all(np.isfinite(grads["initState"][others]))
    assert np.any(np.isnan(grads["recurrentWeight"])) and np.any(np.isnan(grads["bias"]))
