"""GRUGradients (SPEC.md section 6) against central differences (float64) of the loss through
rnngraph's forward op and through the NumPy reference, over a covering list of option
combinations; the returned list for every combination of given inputs; the secondaryBias
gradient of the reset-before GRU; state layouts; Graph.gradients; a random direction at a
medium shape; float32 against float64.

``toolkit.make_inputs`` redraws until no relu / hardSigmoid pre-activation lies within
``KINK_MARGIN`` of a kink, so central differences never straddle one.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import rnngraph as rg
from toolkit import (
    ACTIVATIONS,
    SLOTS,
    Case,
    Signals,
    assert_all_close,
    assert_close,
    cases,
    check_gradients,
    check_random_direction,
    explicit_inputs,
    float32_and_float64,
    gradients,
    hard_sigmoid_saturates,
    make_inputs,
    scale_for,
    signals,
)

CELL = "GRU"
FULL = Case(CELL).with_all_inputs()  # h0 [N,DH], a 0/1 mask [T,N,DH], secondaryBias

# Every pair of values of any two factors below occurs in some row
# (test_gradient_cases_cover_all_pairs checks it).
PAIRWISE = [
    "bi-z=none-r=hardSigmoid-noW-nobias-h0[1,N,DH]-b2-mask[T,N,1]-dy-T1",
    "reverse-z=relu-r=tanh-o=relu-nobias-h0[1,N,DH]-b2-dS",
    "fwd-z=relu-r=hardSigmoid-o=sigmoid-noW-nobias-b2-mask[T,N,1]-dS",
    "reverse-z=tanh-r=none-o=sigmoid-noW-h0-b2-mask[T,N,1]-T1",
    "fwd-z=tanh-r=tanh-o=hardSigmoid-noW-h0[1,N,DH]-mask",
    "fwd-r=none-o=hardSigmoid-h0[1,N,DH]-b2-dy-T1",
    "bi-z=hardSigmoid-r=tanh-o=sigmoid-nobias-mask-dy-T1",
    "fwd-resetGateFirst-z=hardSigmoid-r=tanh-h0-b2-dy-T1",
    "reverse-flipZ-z=none-o=sigmoid-h0[1,N,DH]-dy-T1",
    "reverse-flipZ-r=relu-noW-nobias-dS",
    "fwd-flipZ-r=tanh-o=hardSigmoid-noW-nobias-h0-mask[T,N,1]",
    "reverse-flipZ-r=hardSigmoid-o=relu-noW-nobias-h0-b2-mask-dS-T1",
    "bi-resetGateFirst-flipZ-z=none-r=relu-o=none-nobias-h0[1,N,DH]-mask[T,N,1]",
    "reverse-resetGateFirst-flipZ-z=relu-r=tanh-o=none-noW-nobias-b2-T1",
    "bi-resetGateFirst-flipZ-z=hardSigmoid-r=none-o=none-noW-h0[1,N,DH]-b2-mask-dS",
    "bi-resetGateFirst-flipZ-z=hardSigmoid-r=hardSigmoid-o=relu-dy",
    "bi-resetAfter-z=none-r=hardSigmoid-o=hardSigmoid-noW-nobias-h0-mask",
    "fwd-resetAfter-z=relu-r=relu-o=none-noW-h0[1,N,DH]-b2-mask-dS",
    "bi-resetAfter-z=tanh-r=relu-o=relu-h0[1,N,DH]-dS-T1",
    "fwd-resetAfter-z=tanh-noW-h0[1,N,DH]-b2-mask-dS-T1",
    "fwd-resetAfter-z=hardSigmoid-o=relu-noW-nobias-mask[T,N,1]",
    "bi-resetGateFirst-resetAfter-z=tanh-r=hardSigmoid-o=none-h0[1,N,DH]-T1",
    "bi-resetGateFirst-resetAfter-o=none-nobias-h0-b2-dy",
    "reverse-resetGateFirst-resetAfter-z=hardSigmoid-r=relu-o=hardSigmoid-h0-b2-dy-T1",
    "fwd-resetAfter-flipZ-z=none-r=none-o=relu-nobias-dy",
    "bi-resetAfter-flipZ-r=relu-o=sigmoid-h0[1,N,DH]-mask-dS-T1",
    "fwd-resetGateFirst-resetAfter-flipZ-z=none-r=tanh-o=hardSigmoid-nobias-h0[1,N,DH]-mask-dS-T1",
    "bi-resetGateFirst-resetAfter-flipZ-z=relu-r=none-nobias-h0-mask[T,N,1]",
    "bi-resetGateFirst-resetAfter-flipZ-z=relu-o=hardSigmoid-nobias-b2-mask-dy",
    "reverse-resetGateFirst-resetAfter-flipZ-z=tanh-o=sigmoid-noW-nobias-b2-mask-dy",
]
# Then: fractional masks (values in (0, 1) besides 0 and 1) and more mask layouts, reverse
# with bidirectional (reverse is ignored), N = 1, H ≠ I.
SPECIAL = [
    "bi-resetAfter-h0-b2-fracmask",
    "reverse-resetGateFirst-flipZ-z=tanh-h0-b2-fracmask[T,N,1]-dS",
    "fwd-resetAfter-r=tanh-o=sigmoid-noW-h0-b2-fracmask[1,N,DH]-dy",
    "bi-flipZ-nobias-h0-fracmask[T,1,1]-T1-N1",
    "reverse+bi-resetAfter-flipZ-h0-b2-mask",
    "reverse+bi-resetGateFirst-z=relu-noW-h0[1,N,DH]-fracmask[N,1]-dS",
    "fwd-resetAfter-z=hardSigmoid-h0-b2-fracmask[]-N1-I2-H4",
    "bi-resetGateFirst-resetAfter-h0-b2-fracmask[DH]-T2-I4-H3",
    "reverse-resetAfter-o=relu-b2-mask[1,1,DH]-dy-N3",
]
FACTORS = {
    "resetAfter": (False, True), "flipZ": (False, True), "resetGateFirst": (False, True),
    **{slot: ACTIVATIONS for slot in SLOTS[CELL]}, "direction": ("fwd", "reverse", "bi"),
    "mask": (None, "[T,N,DH]", "[T,N,1]"), "inputWeight": (False, True), "bias": (False, True),
    "initState": (None, "[N,DH]", "[1,N,DH]"), "secondaryBias": (False, True),
    "signal": ("dy", "dS", "dy+dS"), "T": (1, 3),
}


def factor_values(case: Case) -> dict:
    return {name: case.activation(name) if name in SLOTS[CELL] else getattr(case, name)
            for name in FACTORS}


def test_gradient_cases_cover_all_pairs():
    rows = [factor_values(Case.parse(CELL, text)) for text in PAIRWISE]
    for row in rows:
        assert all(row[name] in values for name, values in FACTORS.items()), row
    for a, b in itertools.combinations(FACTORS, 2):
        missing = set(itertools.product(FACTORS[a], FACTORS[b])) - {(r[a], r[b]) for r in rows}
        assert not missing, f"{a} × {b}: pairs {sorted(missing, key=str)} not covered"


def exactly_zero(case: Case) -> set:
    """Gradients SPEC.md section 5 makes exactly zero: secondaryBias without resetAfter (it is
    unused); recurrentWeight when its only step sees hp = 0 (T = 1, no initState)."""
    zero = set() if case.resetAfter else {"secondaryBias"}
    return zero | ({"recurrentWeight"} if case.T == 1 and not case.initState else set())


@pytest.mark.parametrize("case", cases(CELL, *PAIRWISE, *SPECIAL))
def test_gradients_match_finite_differences(case, rng):
    x = make_inputs(case, rng, scale=scale_for(case),
                    accept=lambda pre: hard_sigmoid_saturates(case, pre))
    sig = signals(case, rng)
    analytic = gradients(case, x, sig)  # count, SPEC order, shapes, dtypes checked
    check_gradients(case, x, sig, analytic)
    for label in exactly_zero(case) & set(analytic):
        assert np.all(analytic[label] == 0), f"d{label} is not exactly zero"
    if not {"relu", "hardSigmoid"} & set(case.slot_activations.values()):  # (flat pieces
        for label in set(analytic) - exactly_zero(case):  # may cut a path back)
            assert np.any(analytic[label] != 0), f"d{label} is all zero"
        if "dy" not in case.signal:  # the final state depends on every step's input
            assert np.all(np.any(analytic["source"] != 0, axis=(1, 2)))


# --- the returned list: order, count, shapes ---------------------------------------------

RETURNED_LIST_CASES = [
    Case(CELL, direction, resetAfter=True, inputWeight=w, bias=b, initState=h0,
         secondaryBias=b2, signal=signal, T=4, I=5, H=3).param()
    for direction, w, b, h0, b2, signal in itertools.product(
        ("fwd", "bi"), (True, False), (True, False), (None, "[N,DH]", "[1,N,DH]"),
        (True, False), ("dy+dS", "dy"))
]


@pytest.mark.parametrize("case", RETURNED_LIST_CASES)
def test_returned_list_order_count_and_shapes(case, rng):
    """One gradient per given input in SPEC.md order (source, recurrentWeight, inputWeight,
    bias, initState, secondaryBias), none for mask / zState / outputFwd / the cotangents,
    each shaped like its input: the runner checks it all. Sizes all differ (T, N, I, H = 4,
    2, 5, 3). Values: those with every absent input given as what its absence means, the
    saved tensors fed as arrays."""
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    got = gradients(case, x, sig)
    assert list(got) == list(case.returned)
    baseline = gradients(*explicit_inputs(case, x), sig, wired=False)
    for label, value in got.items():
        assert_close(value, baseline[label].reshape(value.shape), "float64", label)


# --- secondaryBias, state layouts, the training flag, Graph.gradients -------------------

@pytest.mark.parametrize("direction", ["fwd", "bi"])
def test_secondary_bias_gradient_is_exactly_zero_with_reset_before(direction, rng):
    case = FULL.but(direction=direction, T=4, N=3)
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    before = gradients(case, x, sig)
    assert np.all(before.pop("secondaryBias") == 0)
    # The other gradients do not depend on secondaryBias at all.
    without = {k: v for k, v in x.items() if k != "secondaryBias"}
    assert_all_close(before, gradients(case.but(secondaryBias=False), without, sig), "identical")
    after = gradients(case.but(resetAfter=True), x, sig)
    assert np.all(after["secondaryBias"] != 0)


@pytest.mark.parametrize("direction", ["fwd", "bi"])
def test_state_layouts_give_the_same_gradients(direction, rng):
    """initState and stateGradient as [1, N, D·H] (SPEC.md section 1) or [N, D·H]."""
    case = FULL.but(direction=direction, resetAfter=True, mask=None)
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    flat = gradients(case, x, sig)
    nested = gradients(case.but(initState="[1,N,DH]"),
                       {**x, "initState": x["initState"][None]}, sig._replace(dS=sig.dS[None]))
    assert nested["initState"].shape == (1, case.N, case.DH)
    nested["initState"] = nested["initState"][0]
    assert_all_close(nested, flat, "identical")


def test_gradient_op_ignores_the_training_flag(rng):
    case = FULL.but(resetAfter=True)
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    assert_all_close(gradients(case, x, sig, training=True), gradients(case, x, sig),
                     "identical")


@pytest.mark.parametrize("case", cases(CELL, "bi-flipZ-h0-b2-mask-dy",
                                       "bi-resetAfter-flipZ-h0-b2-mask-dy"))
def test_graph_gradients_equal_the_gradient_op(case, rng):
    """Graph.gradients of Σ h: the gradient op with sourceGradient = 1."""
    x = make_inputs(case, rng)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    (h,) = g.GRU(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                 descriptor=case.descriptor())
    wrt = [ph[label] for label in case.returned]
    grads = g.gradients(of=h, with_=wrt)
    result = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=[grads[t] for t in wrt])
    expected = gradients(case, x, Signals(np.ones((case.T, case.N, case.DH))))
    assert_all_close({label: result[grads[t]] for label, t in zip(case.returned, wrt)},
                     expected, "identical", case.id)


# --- medium shapes: one random direction ---------------------------------------------------

@pytest.mark.parametrize("case", cases(
    CELL,
    "fwd-h0-b2-mask-T12-N5-I7-H6",
    "fwd-resetAfter-h0-b2-mask-T12-N5-I7-H6",
    "bi-resetGateFirst-flipZ-h0-b2-mask-T12-N5-I7-H6",
    "bi-resetGateFirst-resetAfter-flipZ-h0-b2-mask-T12-N5-I7-H6",
    "reverse-z=tanh-r=hardSigmoid-h0-b2-fracmask[T,N,1]-T12-N5-I7-H6",
    "bi-resetAfter-o=relu-noW-h0[1,N,DH]-b2-fracmask-dS-T12-N5-I7-H6",
))
def test_random_direction_medium_shape(case, rng):
    """The directional derivative along one random direction, through rnngraph and the
    reference; pre-activations keep 1e-4 from kinks (eps·|direction| stays below that)."""
    x = make_inputs(case, rng, scale=0.4, margin=1e-4)
    sig = signals(case, rng)
    analytic = gradients(case, x, sig)
    for through in ("rnngraph", "reference"):
        check_random_direction(case, x, sig, analytic, rng, through=through)


# --- float32 against float64 ---------------------------------------------------------------

@pytest.mark.parametrize("case", [FULL.but(direction=d, resetAfter=a, T=8, N=3, I=5, H=4)
                                  .param() for d in ("fwd", "reverse", "bi")
                                  for a in (False, True)])
def test_float32_close_to_float64(case, rng):
    """The same inputs (float32-representable) and cotangents in both dtypes."""
    x32, x64 = float32_and_float64(case, rng)
    sig32 = signals(case.but(dtype="float32"), rng)
    sig64 = Signals(*(None if s is None else s.astype(np.float64) for s in sig32))
    grads32 = gradients(case.but(dtype="float32"), x32, sig32)
    grads64 = gradients(case, x64, sig64)
    assert_all_close(grads32, grads64, "float32_gradients", case.id)
    assert np.any(grads32["source"] != grads64["source"])  # really computed in float32
