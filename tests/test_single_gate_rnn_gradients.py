"""singleGateRNNGradients (SPEC.md section 6) against central differences (float64) of the
loss through rnngraph's forward op and through the NumPy reference, over a covering list of
option combinations; the returned list for every combination of given inputs; every mask
layout; float32 against float64; a random direction at a medium shape; bidirectional as two
unidirectional ops.

``toolkit.make_inputs`` redraws until no relu / hardSigmoid pre-activation lies within
``KINK_MARGIN`` of a kink, so central differences never straddle one.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from toolkit import (
    ACTIVATIONS,
    Case,
    Signals,
    assert_all_close,
    assert_close,
    blas_threads,
    cases,
    check_gradients,
    check_random_direction,
    float32_and_float64,
    gradients,
    make_inputs,
    one_direction,
    reference,
    scale_for,
    signals,
)

CELL = "singleGateRNN"

# Every pair of values of (activation, direction, mask, W, bias, initState, stateGradient)
# occurs in some row (test_gradient_cases_cover_all_pairs checks it); activation × mask is
# covered completely.
PAIRWISE = [
    "fwd-act=none",
    "reverse-act=none-noW-nobias-h0-fracmask-dy",
    "bi-act=none-h0[1,N,DH]-fracmask[1,N,DH]-dy",
    "fwd-act=none-noW-nobias-h0[1,N,DH]-fracmask[N,1]",
    "reverse-act=none-h0-fracmask[T,1,1]",
    "bi-noW-nobias-dy",
    "fwd-h0-fracmask",
    "reverse-nobias-fracmask[1,N,DH]",
    "reverse-h0[1,N,DH]-fracmask[N,1]-dy",
    "fwd-noW-fracmask[T,1,1]-dy",
    "bi-act=tanh-h0",
    "fwd-act=tanh-noW-nobias-fracmask-dy",
    "fwd-act=tanh-noW-h0-fracmask[1,N,DH]",
    "reverse-act=tanh-fracmask[N,1]",
    "bi-act=tanh-nobias-h0[1,N,DH]-fracmask[T,1,1]",
    "reverse-act=sigmoid-h0[1,N,DH]",
    "bi-act=sigmoid-noW-nobias-fracmask-dy",
    "fwd-act=sigmoid-h0-fracmask[1,N,DH]",
    "bi-act=sigmoid-h0-fracmask[N,1]",
    "fwd-act=sigmoid-fracmask[T,1,1]",
    "fwd-act=hardSigmoid",
    "reverse-act=hardSigmoid-noW-nobias-h0[1,N,DH]-fracmask-dy",
    "bi-act=hardSigmoid-h0-fracmask[1,N,DH]",
    "fwd-act=hardSigmoid-fracmask[N,1]",
    "fwd-act=hardSigmoid-fracmask[T,1,1]",
]
# Then: the signal through the final state only (dS), T = 1, N = 1, H > I, reverse together
# with bidirectional (reverse is ignored), nothing optional at all, 0/1 masks.
SPECIAL = [
    "fwd-act=tanh-h0-fracmask-dS",
    "reverse-nobias-h0-dS",
    "bi-act=sigmoid-noW-h0[1,N,DH]-fracmask-dS",
    "bi-act=hardSigmoid-h0-dS",
    "fwd-act=tanh-h0-T1",
    "bi-h0-fracmask-T1",
    "reverse-act=sigmoid-nobias-h0[1,N,DH]-fracmask-N1",
    "bi-act=none-noW-h0-dy-N1",
    "bi-act=tanh-h0-fracmask-T1-N1",
    "reverse-act=tanh-h0-fracmask-I2-H4",
    "bi-nobias-h0-fracmask[N,1]-I2-H4",
    "reverse+bi-act=tanh-h0-fracmask",
    "fwd-act=tanh-noW-nobias-dy",
    "reverse+bi-act=hardSigmoid-noW-nobias",
    "fwd-h0-mask",
    "bi-h0-mask",
]
FACTORS = {
    "activation": ACTIVATIONS, "direction": ("fwd", "reverse", "bi"),
    "mask": (None, "[T,N,DH]", "[1,N,DH]", "[N,1]", "[T,1,1]"), "inputWeight": (True, False),
    "bias": (True, False), "initState": (None, "[N,DH]", "[1,N,DH]"), "signal": ("dy+dS", "dy"),
}


def factor_values(case: Case) -> dict:
    return {name: case.activation("activation") if name == "activation" else getattr(case, name)
            for name in FACTORS}


def test_gradient_cases_cover_all_pairs():
    rows = [factor_values(Case.parse(CELL, text)) for text in PAIRWISE]
    for row in rows:
        assert all(row[name] in values for name, values in FACTORS.items()), row
    for a, b in itertools.combinations(FACTORS, 2):
        seen = {(row[a], row[b]) for row in rows}
        missing = set(itertools.product(FACTORS[a], FACTORS[b])) - seen
        assert not missing, f"{a} × {b}: pairs {sorted(missing, key=str)} not covered"


@pytest.mark.parametrize("case", cases(CELL, *PAIRWISE, *SPECIAL))
def test_gradients_match_finite_differences(case, rng):
    x = make_inputs(case, rng, scale=scale_for(case))
    sig = signals(case, rng)
    analytic = gradients(case, x, sig)  # count, SPEC order, shapes, dtypes checked
    if "dy" not in case.signal:  # the final state alone carries the signal back
        assert np.any(analytic["source"] != 0) and np.any(analytic["recurrentWeight"] != 0)
        if case.activation("activation") not in ("relu", "hardSigmoid"):  # (flat parts may
            assert all(np.any(g != 0) for g in analytic.values())  # cut a path back)
    if case.activation("activation") == "hardSigmoid":  # saturated and linear parts both hit
        z = reference(case, x)["zState"]
        assert np.any(np.abs(z) > 2.5) and np.any(np.abs(z) < 2.5)
    check_gradients(case, x, sig, analytic)


# --- the returned list: order, count, shapes ---------------------------------------------

RETURNED_LIST_CASES = [
    Case(CELL, direction, {"activation": "tanh"}, inputWeight=w, bias=b, initState=h0,
         mask=mask, signal=signal, I=5, H=4).param()
    for direction, w, b, h0, mask, signal in itertools.product(
        ("fwd", "bi"), (True, False), (True, False), (None, "[N,DH]", "[1,N,DH]"),
        (None, "[T,N,DH]"), ("dy+dS", "dy"))
]


@pytest.mark.parametrize("case", RETURNED_LIST_CASES)
def test_returned_list_order_count_and_shapes(case, rng):
    """One gradient per given input in SPEC.md order (source, recurrentWeight, inputWeight,
    bias, initState), none for mask / stateGradient / sourceGradient / zState, each shaped
    like its input: the runner checks all of it. Sizes all differ (T, N, I, H = 3, 2, 5, 4)
    so that a swap cannot go unnoticed. Values: equal to the gradients with bias and
    initState given as the zeros their absence means."""
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    got = gradients(case, x, sig)
    assert list(got) == list(case.returned)
    full = {"bias": np.zeros(case.DH), "initState": np.zeros((case.N, case.DH))}
    full |= {k: v.reshape(full[k].shape) if k in full else v for k, v in x.items()}
    full_case = case.but(bias=True, initState="[N,DH]")
    baseline = gradients(full_case, full, sig, wired=False)
    for label, value in got.items():
        assert_close(value, baseline[label].reshape(value.shape), "float64", label)


# --- masks of every broadcastable layout -------------------------------------------------

MASK_LAYOUTS = ("[]", "[DH]", "[1]", "[T,1,1]", "[1,1,DH]", "[N,DH]", "[N,1]", "[T,N,1]")


@pytest.mark.parametrize("case", [
    Case(CELL, direction, {"activation": "tanh"}, initState="[N,DH]", mask=layout,
         fractional_mask=True).param()
    for layout in MASK_LAYOUTS for direction in ("fwd", "bi")])
def test_every_broadcastable_mask_layout(case, rng):
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    check_gradients(case, x, sig, gradients(case, x, sig))


# --- float32 against float64 ---------------------------------------------------------------

@pytest.mark.parametrize("case", [
    Case(CELL, direction, {"activation": act}, initState="[N,DH]", mask="[T,N,DH]", T=10, N=4,
         I=8, H=16).param()
    for act in ACTIVATIONS for direction in ("fwd", "reverse", "bi")])
def test_float32_close_to_float64(case, rng):
    """The same inputs (float32-representable) in both dtypes; 1e-4 from kinks, so no
    derivative flips between them; contracting recurrent weights."""
    x32, x64 = float32_and_float64(case, rng, scale=0.5, weight_scale=0.5 / np.sqrt(case.H),
                                   margin=1e-4)
    sig32 = signals(case.but(dtype="float32"), rng)
    sig64 = Signals(*(None if s is None else s.astype(np.float64) for s in sig32))
    grads32 = gradients(case.but(dtype="float32"), x32, sig32)
    assert_all_close(grads32, gradients(case, x64, sig64), "float32_gradients", case.id)


# --- medium shapes: one random direction ---------------------------------------------------

@pytest.mark.parametrize("case", cases(
    CELL,
    "bi-act=tanh-h0-fracmask-T20-N8-I16-H24",
    "reverse-h0-fracmask[1,N,DH]-T20-N8-I16-H24",
    "fwd-act=sigmoid-noW-h0[1,N,DH]-T20-N8-I16-H24",
    "fwd-act=hardSigmoid-nobias-h0-fracmask[N,1]-dy-T20-N8-I16-H24",
    "reverse-act=none-h0-T20-N8-I16-H24",
))
def test_random_direction_medium_shape(case, rng):
    """The directional derivative along one random direction, through rnngraph and the
    reference; contracting recurrent weights keep 20 steps stable, and pre-activations keep
    1e-4 from kinks (eps·|direction| stays below that)."""
    scale = scale_for(case)
    x = make_inputs(case, rng, scale=scale, weight_scale=scale * 0.8 / np.sqrt(case.H),
                    margin=1e-4)
    sig = signals(case, rng)
    analytic = gradients(case, x, sig)
    for through in ("rnngraph", "reference"):
        check_random_direction(case, x, sig, analytic, rng, through=through)


# --- bidirectional = a forward and a reverse unidirectional op side by side ----------------

@pytest.mark.parametrize("threads", [1, 2])
def test_bidirectional_is_two_independent_directions(threads, rng):
    """At a medium shape, with 1 and 2 threads: each direction's blocks of every gradient are
    the gradients of a unidirectional op on its blocks; dsource is their sum."""
    case = Case(CELL, "bi", {"activation": "tanh"}, initState="[N,DH]", mask="[T,N,DH]", T=12,
                N=16, I=24, H=32)
    x = make_inputs(case, rng, scale=0.5, weight_scale=0.8 / np.sqrt(case.H))
    sig = signals(case, rng)
    H = case.H
    with blas_threads(threads):
        both = gradients(case, x, sig)
        dsource = np.zeros_like(x["source"])
        for d in (0, 1):
            rows = columns = slice(d * H, (d + 1) * H)
            half, half_x = one_direction(case, x, d)
            one = gradients(half, half_x, Signals(sig.dy[..., columns], sig.dS[:, columns]))
            assert_close(both["recurrentWeight"][d], one["recurrentWeight"], "float64_medium")
            assert_close(both["inputWeight"][rows], one["inputWeight"], "float64_medium")
            assert_close(both["bias"][rows], one["bias"], "float64_medium")
            assert_close(both["initState"][:, columns], one["initState"], "float64_medium")
            dsource += one["source"]
        assert_close(both["source"], dsource, "float64_medium")
