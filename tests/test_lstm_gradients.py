"""LSTMGradients (SPEC.md section 6) against central differences (float64) of
L = Σ h·dy + Σ h_final·dS + Σ c_final·dC through rnngraph's forward op and through the NumPy
reference: every slot × activation, the option layouts and directions, each cotangent alone,
the gradient op's irrelevant flags, saturated hardSigmoid. Then: stateGradient as dy at the
last processed step, the returned list for every combination of given inputs, saved tensors
fed as arrays, Graph.gradients, a random direction at medium shapes, float32 against float64
and bidirectional as two unidirectional ops.

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
    assert_gradients_close,
    blas_threads,
    cases,
    check_gradients,
    check_random_direction,
    float32_and_float64,
    gradients,
    hard_sigmoid_saturates,
    loss,
    make_inputs,
    numerical_gradients,
    one_direction,
    signals,
)

CELL = "LSTM"

# Every slot × every activation, forward, with both states and a peephole.
ACTIVATION_CASES = list({
    case.id: case.param() for case in (
        Case(CELL, activations={slot: activation}, initState="[N,DH]", initCell="[N,DH]",
             peephole="[D4H]") for slot in SLOTS[CELL] for activation in ACTIVATIONS)
}.values())
OPTION_CASES = cases(
    CELL,
    "fwd", "fwd-h0-c0", "fwd-h0-c0-dy", "fwd-h0-peephole", "fwd-c0-peephole",
    "fwd-forgetGateLast-h0-c0-peephole", "fwd-forgetGateLast-h0-c0-peephole-fracmask",
    "bi-forgetGateLast-h0-c0-peephole[2,4H]", "bi-h0-c0-peephole[2,4H]", "bi-h0-c0-peephole",
    "fwd-h0[1,N,DH]-c0[1,N,DH]-peephole", "bi-h0[1,N,DH]-c0[1,N,DH]",
    # masks
    "fwd-h0-c0-mask", "fwd-h0-c0-peephole-mask[T,N,1]", "fwd-h0-c0-fracmask",
    "fwd-h0-c0-peephole-fracmask", "fwd-h0-c0-peephole-mask[T,1,DH]",
    "fwd-h0-c0-peephole-mask[N,DH]", "fwd-h0-c0-peephole-fracmask[T,N,1]",
    "bi-h0-c0-peephole[2,4H]-mask", "bi-h0-c0-mask[T,1,1]",
    # directions
    "reverse-h0-c0", "reverse-h0-c0-peephole-mask", "bi-h0-c0", "reverse+bi-h0-c0-peephole",
    # the signal through the final state only, the final cell only, or both
    "fwd-h0-c0-peephole-dS", "fwd-h0-c0-peephole-dC", "fwd-h0-c0-mask-dS+dC",
    "reverse-h0-c0-peephole-dS", "reverse-h0-c0-peephole-dC",
    "bi-h0-c0-peephole[2,4H]-dS", "bi-h0-c0-mask-dC",
    # no W, no bias
    "fwd-noW-h0-c0-peephole", "bi-noW-h0-c0-peephole[2,4H]", "fwd-nobias-h0-c0-peephole",
    "bi-nobias-h0-c0", "reverse-noW-nobias-h0-c0",
    # sizes
    "fwd-h0-c0-peephole-T1", "fwd-h0-c0-dC-T1", "bi-h0-c0-peephole[2,4H]-T1",
    "fwd-h0-c0-mask-N1", "fwd-h0-c0-peephole-I5-H3", "bi-h0-c0-I2-H3",
    "bi-forgetGateLast-z=relu-o=hardSigmoid-h0[1,N,DH]-c0-peephole[2,4H]-mask[T,N,1]",
)
KINKED = {"relu", "hardSigmoid"}


@pytest.mark.parametrize("case", ACTIVATION_CASES + OPTION_CASES)
def test_gradients_match_finite_differences(case, rng):
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    analytic = gradients(case, x, sig)  # count, SPEC order, shapes, dtypes checked
    # Every input receives some signal (flat parts of relu / hardSigmoid may cut paths, and
    # a mask may hide initState altogether).
    smooth = not KINKED & set(case.slot_activations.values())
    hidden = ("initState",) if case.mask else ()
    for label, value in analytic.items():
        if label in ("source", "recurrentWeight") or smooth and label not in hidden:
            assert np.any(value != 0), f"{case.id}: d{label} is zero"
    check_gradients(case, x, sig, analytic)


def flag_case(text, forward_produce_cell, training, produce_cell):
    """A case with the forward op's produceCell and the gradient op's training, produceCell."""
    def tf(flag):
        return "FT"[flag]
    flags = (forward_produce_cell, training, produce_cell)
    return pytest.param(Case.parse(CELL, text), flags, id=f"{text}-forward[produceCell="
                        f"{tf(flags[0])}]-gradient[training={tf(flags[1])},produceCell="
                        f"{tf(flags[2])}]")


# SPEC section 6: the gradient op's training flag is irrelevant, and so is produceCell on
# either op.
@pytest.mark.parametrize("case, flags", [
    flag_case("fwd-h0-c0-peephole", False, False, False),
    flag_case("fwd-h0-c0-peephole", True, True, True),
    flag_case("fwd-h0-c0-mask", False, True, False),
    flag_case("bi-h0-c0-peephole[2,4H]", True, False, True)])
def test_gradient_op_flags_do_not_matter(case, flags, rng):
    forward_produce_cell, training, produce_cell = flags
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    analytic = gradients(case, x, sig, forward_overrides={"produceCell": forward_produce_cell},
                         training=training, produceCell=produce_cell)
    check_gradients(case, x, sig, analytic)


@pytest.mark.parametrize("case", [
    Case(CELL, activations={slot: "hardSigmoid"}, initState="[N,DH]", initCell="[N,DH]",
         peephole="[D4H]", T=4).param() for slot in SLOTS[CELL]])
def test_hard_sigmoid_saturated_and_linear(case, rng):
    """Some pre-activations of the hardSigmoid slot lie beyond ±2.5 (flat: zero derivative,
    SPEC section 2), some inside."""
    x = make_inputs(case, rng, scale=1.5, accept=lambda pre: hard_sigmoid_saturates(case, pre))
    sig = signals(case, rng)
    check_gradients(case, x, sig, gradients(case, x, sig))


@pytest.mark.parametrize("case", cases(CELL, *(f"{d}-h0-c0-peephole-dS"
                                              for d in ("fwd", "reverse", "bi", "reverse+bi"))))
def test_state_gradient_enters_at_the_last_processed_step(case, rng):
    """SPEC sections 4 and 6: stateGradient is dL/d(final state), out[T-1] forward and out[0]
    reverse (and the reverse half of bidirectional). As sourceGradient at exactly those
    steps it gives the same gradients."""
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    dy = np.zeros_like(sig.dy)
    for d, reverse in enumerate((False, True) if case.bidirectional else (case.reverse,)):
        columns = slice(d * case.H, (d + 1) * case.H)
        dy[0 if reverse else -1, :, columns] = sig.dS[:, columns]
    via_state = gradients(case, x, sig)
    assert_all_close(gradients(case, x, Signals(dy)), via_state, "float64", case.id)
    assert np.any(via_state["source"][-1 if case.reverse else 0] != 0)  # it reached back


RETURNED_LIST_CASES = [
    Case(CELL, direction, inputWeight=w, bias=b, peephole=layout if p else None, initState=h0,
         initCell=c0, I=5, H=4).param()
    for (direction, layout), w, b, p, h0, c0 in itertools.product(
        (("fwd", "[D4H]"), ("bi", "[2,4H]")), (True, False), (True, False), (False, True),
        (None, "[1,N,DH]"), (None, "[N,DH]"))]


@pytest.mark.parametrize("case", RETURNED_LIST_CASES)
def test_returned_list_follows_the_given_inputs(case, rng):
    """One gradient per given input in SPEC order (source, recurrentWeight, inputWeight, bias,
    peephole, initState, initCell), none for the mask or the cotangents, each shaped like its
    input (the runner checks it); values equal those with bias, peephole and states given as
    the zeros their absence means."""
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    got = gradients(case, x, sig)
    assert list(got) == list(case.returned)
    full_case = case.but(bias=True, peephole="[D4H]", initState="[N,DH]", initCell="[N,DH]")
    DGH = case.D * case.G * case.H
    zeros = {"bias": np.zeros(DGH), "peephole": np.zeros(DGH),
             "initState": np.zeros((case.N, case.DH)), "initCell": np.zeros((case.N, case.DH))}
    full = zeros | {k: v.reshape(zeros[k].shape) if k in zeros else v for k, v in x.items()}
    baseline = gradients(full_case, full, sig, wired=False)
    for label, value in got.items():
        assert_close(value, baseline[label].reshape(value.shape), "float64", label)


def test_saved_tensors_fed_as_arrays_give_the_same_gradients(rng):
    """The forward run alone, its h / c / zState fed back as arrays, equals both ops wired in
    one graph."""
    case = Case(CELL, "bi", forgetGateLast=True, initState="[N,DH]", initCell="[1,N,DH]",
                peephole="[2,4H]", mask="[T,N,1]")
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    wired = gradients(case, x, sig)
    assert_all_close(gradients(case, x, sig, wired=False), wired, "float64", case.id)


@pytest.mark.parametrize("training", [False, True], ids=["training=F", "training=T"])
@pytest.mark.parametrize("case", cases(CELL, "fwd-h0-c0-peephole-mask-dy",
                                       "bi-h0-c0-peephole-mask-dy"))
def test_graph_gradients_of_h(case, training, rng):
    """Graph.gradients(of=h) differentiates Σ h through LSTMGradients (with a training twin
    of the forward op when training=False); against central differences of the reference."""
    x = make_inputs(case, rng)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    h = g.LSTM(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
               descriptor=case.descriptor(training=training, produceCell=True))[0]
    grads = g.gradients(of=h, with_=[ph[k] for k in case.returned])
    result = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=list(grads.values()))
    analytic = {k: result[grads[ph[k]]] for k in case.returned}
    through = loss(case, Signals(np.ones((case.T, case.N, case.DH))), through="reference")
    numeric = numerical_gradients(lambda a: through({**x, **a}),
                                  {k: x[k] for k in case.returned})
    assert_gradients_close(analytic, numeric, f"Graph.gradients {case.id} training={training}")


@pytest.mark.parametrize("case", cases(
    CELL, "bi-h0-c0-peephole[2,4H]-mask-T12-N6-I10-H16",
    "reverse-forgetGateLast-act=sigmoid-h0[1,N,DH]-c0-peephole-mask[T,N,1]-T10-N5-I7-H12"))
def test_random_direction_medium_shape(case, rng):
    """The directional derivative along one random direction, through rnngraph and the
    reference."""
    x = make_inputs(case, rng, scale=0.3)
    sig = signals(case, rng)
    analytic = gradients(case, x, sig)
    for through in ("rnngraph", "reference"):
        check_random_direction(case, x, sig, analytic, rng, through=through)


@pytest.mark.parametrize("case", [
    Case(CELL, direction, activations, initState="[N,DH]", initCell="[N,DH]", peephole="[D4H]",
         mask="[T,N,DH]", T=6, N=3, I=4, H=4).param()
    for direction, activations in itertools.product(
        ("fwd", "reverse", "bi"), ({}, {"z": "relu", "o": "hardSigmoid"}))])
def test_float32_close_to_float64(case, rng):
    """The same (float32-representable) inputs and cotangents in both dtypes, 1e-4 from
    kinks, so no derivative flips between them."""
    x32, x64 = float32_and_float64(case, rng, scale=0.5, margin=1e-4)
    sig32 = signals(case.but(dtype="float32"), rng)
    sig64 = Signals(*(None if s is None else s.astype(np.float64) for s in sig32))
    grads32 = gradients(case.but(dtype="float32"), x32, sig32)
    grads64 = gradients(case, x64, sig64)
    assert_all_close(grads32, grads64, "float32_gradients", case.id)
    assert np.any(grads32["recurrentWeight"] != grads64["recurrentWeight"])  # float32 really


@pytest.mark.parametrize("threads", [1, 2])
def test_bidirectional_is_two_independent_directions(threads, rng):
    """At a medium shape, with 1 and 2 threads: each direction's blocks of every gradient are
    the gradients of a unidirectional op on its blocks; dsource is their sum."""
    case = Case(CELL, "bi", initState="[N,DH]", initCell="[N,DH]", peephole="[2,4H]",
                mask="[T,N,DH]", T=12, N=16, I=24, H=32)
    x = make_inputs(case, rng, scale=0.5, weight_scale=0.8 / np.sqrt(case.H))
    sig = signals(case, rng)
    H, GH = case.H, case.G * case.H
    with blas_threads(threads):
        both = gradients(case, x, sig)
        dsource = np.zeros_like(x["source"])
        for d in (0, 1):
            rows, columns = slice(d * GH, (d + 1) * GH), slice(d * H, (d + 1) * H)
            half, half_x = one_direction(case, x, d)
            one = gradients(half, half_x, Signals(*(s[..., columns] for s in sig)))
            blocks = {"recurrentWeight": both["recurrentWeight"][d],
                      "inputWeight": both["inputWeight"][rows], "bias": both["bias"][rows],
                      "peephole": both["peephole"][d], "initState": both["initState"][:, columns],
                      "initCell": both["initCell"][:, columns]}
            assert_all_close(blocks, {k: v for k, v in one.items() if k != "source"},
                             "float64_medium", half.direction)
            dsource += one["source"]
        assert_close(both["source"], dsource, "float64_medium", "source")
