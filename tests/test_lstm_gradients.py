"""LSTMGradients against central differences (float64), SPEC.md section 6.

Every case compares every returned gradient with central differences of the loss
L = Σ h·dy + Σ h_final·dS + Σ c_final·dC computed twice: through rnngraph's own forward op
and through the NumPy reference. Inputs are redrawn until every pre-activation of a relu or
hardSigmoid is 1e-3 away from its kink (lstm_helpers.draw_inputs), so the finite
differences are valid; seeds come from the test id, so every run sees the same data.
"""

import numpy as np
import pytest

import gradcheck
import harness
import lstm_helpers as lh
import rnngraph as rg


@pytest.fixture
def rng(request):
    # conftest's rng seeds from hash(nodeid), which is salted per process: use CRC-32.
    return lh.stable_rng(request.node.nodeid)


def case(id, desc=None, signal="dy+dS+dC", flags=None, **inputs):
    """desc: LSTMDescriptor properties; signal: which cotangents are non-zero; flags:
    run_gradients options (forward produceCell, gradient-op training/produceCell)."""
    return pytest.param(desc or {}, inputs, signal, flags or {}, id=f"{id}-{signal}")


ACTIVATION_CASES = [
    case(f"{slot}={act}", {slot: getattr(rg.RNNActivation, act)}, peephole="[D4H]")
    for slot in lh.SLOTS for act in lh.ACTIVATIONS
]

BI = {"bidirectional": True}
FLAG_CASES = [
    case("defaults"),
    case("defaults", signal="dy"),
    case("forgetGateLast", {"forgetGateLast": True}, peephole="[D4H]"),
    case("forgetGateLast-bidirectional-peephole[2,4H]", {"forgetGateLast": True, **BI},
         peephole="[2,4H]"),
    case("peephole[4H]", peephole="[D4H]"),
    case("bidirectional-peephole[2,4H]", BI, peephole="[2,4H]"),
    case("bidirectional-peephole[8H]", BI, peephole="[D4H]"),
    case("mask[T,N,H]", mask="[T,N,DH]"),
    case("mask[T,N,1]-peephole", mask="[T,N,1]", peephole="[D4H]"),
    case("mask-fractional", mask="fractional[T,N,DH]"),
    case("bidirectional-mask[T,N,2H]-peephole[2,4H]", BI, mask="[T,N,DH]", peephole="[2,4H]"),
    case("bidirectional-mask[T,1,1]", BI, mask="[T,1,1]"),
    case("reverse", {"reverse": True}),
    case("reverse-mask-peephole", {"reverse": True}, mask="[T,N,DH]", peephole="[D4H]"),
    case("bidirectional", BI),
    case("bidirectional-reverse", {"reverse": True, **BI}, peephole="[D4H]"),
    case("initState-initCell[1,N,H]", initState="[1,N,DH]", initCell="[1,N,DH]",
         peephole="[D4H]"),
    case("bidirectional-initState-initCell[1,N,2H]", BI, initState="[1,N,DH]",
         initCell="[1,N,DH]"),
    case("no-initState", initState=None, peephole="[D4H]"),
    case("no-initCell", initCell=None, peephole="[D4H]"),
    case("no-initState-no-initCell", initState=None, initCell=None),
    # Gradient through the final state only / the final cell only (zero sourceGradient).
    case("final-state-only", signal="dS", peephole="[D4H]"),
    case("final-cell-only", signal="dC", peephole="[D4H]"),
    case("final-state-and-cell", signal="dS+dC", mask="[T,N,DH]"),
    case("reverse-final-state-only", {"reverse": True}, signal="dS", peephole="[D4H]"),
    case("reverse-final-cell-only", {"reverse": True}, signal="dC", peephole="[D4H]"),
    case("bidirectional-final-state-only", BI, signal="dS", peephole="[2,4H]"),
    case("bidirectional-final-cell-only", BI, signal="dC", mask="[T,N,DH]"),
    case("no-W", inputWeight=False, peephole="[D4H]"),
    case("bidirectional-no-W", BI, inputWeight=False, peephole="[2,4H]"),
    case("no-bias", bias=False, peephole="[D4H]"),
    case("bidirectional-no-bias", BI, bias=False),
    case("no-W-no-bias-reverse", {"reverse": True}, inputWeight=False, bias=False),
    case("T=1", T=1, peephole="[D4H]"),
    case("T=1", T=1, signal="dC"),
    case("bidirectional-T=1", BI, T=1, peephole="[2,4H]"),
    case("N=1", N=1, mask="[T,N,DH]"),
    case("I=5-H=3", I=5, H=3, peephole="[D4H]"),
    case("I=2-H=3-bidirectional", BI, I=2, H=3),
    # The forward that fed the gradient op, and the gradient op's own (irrelevant) flags.
    case("fwd[produceCell=F,training=T]-grad[training=F,produceCell=F]",
         flags=dict(forward_produceCell=False, gradient_training=False,
                    gradient_produceCell=False), peephole="[D4H]"),
    case("fwd[produceCell=T,training=T]-grad[training=T,produceCell=T]",
         flags=dict(forward_produceCell=True, gradient_training=True,
                    gradient_produceCell=True), peephole="[D4H]"),
    case("fwd[produceCell=F,training=T]-grad[training=T,produceCell=F]",
         flags=dict(forward_produceCell=False, gradient_training=True,
                    gradient_produceCell=False), mask="[T,N,DH]"),
    case("bidirectional-fwd[produceCell=T,training=T]-grad[training=F,produceCell=T]", BI,
         flags=dict(forward_produceCell=True, gradient_training=False,
                    gradient_produceCell=True), peephole="[2,4H]"),
    case("everything-bidirectional-forgetGateLast-hardSigmoid-relu",
         {"forgetGateLast": True, "outputGateActivation": rg.RNNActivation.hardSigmoid,
          "cellGateActivation": rg.RNNActivation.relu, **BI},
         peephole="[2,4H]", mask="[T,N,1]", initState="[1,N,DH]"),
]


def check_against_finite_differences(x, desc, dy, dS, dC, analytic, where):
    H = x["recurrentWeight"].shape[-1]
    differentiable = {k: v for k, v in x.items() if k in lh.DIFFERENTIABLE}
    assert set(analytic) == set(differentiable)
    for use_reference in (False, True):
        loss = harness.loss_function("LSTM", desc, H, dy, dS, dC, use_reference=use_reference)
        numeric = gradcheck.numerical_gradients(lambda a: loss({**x, **a}), differentiable)
        gradcheck.assert_gradients_close(
            analytic, numeric, f"{where} ({'reference' if use_reference else 'rnngraph'} FD)")


@pytest.mark.parametrize("desc_flags, inputs, signal, flags", ACTIVATION_CASES + FLAG_CASES)
def test_gradients_match_finite_differences(desc_flags, inputs, signal, flags, rng, request):
    desc = rg.LSTMDescriptor(**desc_flags)
    x = lh.draw_inputs(rng, desc, **inputs)
    dy, dS, dC = lh.cotangents(rng, x, desc, signal)
    analytic = lh.run_gradients(x, desc, dy, dS, dC, **flags)
    # Some signal reaches every input (a dropped stateGradient/cellGradient would show here
    # and in the comparison below).
    assert np.any(analytic["recurrentWeight"] != 0)
    check_against_finite_differences(x, desc, dy, dS, dC, analytic, request.node.callspec.id)


@pytest.mark.parametrize("slot", lh.SLOTS)
def test_hard_sigmoid_saturated_region(slot, rng):
    # Larger inputs push some pre-activations of the hardSigmoid slot beyond ±2.5, where
    # the activation is flat: the gradient there must be 0 (SPEC.md section 2).
    desc = rg.LSTMDescriptor(**{slot: rg.RNNActivation.hardSigmoid})

    def saturated_and_linear(pre):
        values = np.abs(pre["hardSigmoid"])
        return np.any(values > 2.5) and np.any(values < 2.5)

    x = lh.draw_inputs(rng, desc, accept=saturated_and_linear, scale=1.5, peephole="[D4H]",
                       T=4)
    dy, dS, dC = lh.cotangents(rng, x, desc, "dy+dS+dC")
    analytic = lh.run_gradients(x, desc, dy, dS, dC)
    check_against_finite_differences(x, desc, dy, dS, dC, analytic,
                                     f"hardSigmoid-saturated-{slot}")


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_state_gradient_enters_at_the_last_processed_step(direction, rng):
    # SPEC.md sections 4 and 6: stateGradient is dL/d(final state), the state at out[T-1]
    # (forward) or out[0] (reverse, and the reverse half when bidirectional). Feeding it
    # as sourceGradient at exactly those steps must give identical gradients.
    desc = rg.LSTMDescriptor(reverse=direction == "reverse",
                             bidirectional=direction == "bidirectional")
    x = lh.draw_inputs(rng, desc, peephole="[D4H]")
    T, N, DH = x["source"].shape[0], x["source"].shape[1], x["initState"].shape[1]
    H = DH // lh.num_directions(desc)
    dS = rng.standard_normal((N, DH))
    via_state = lh.run_gradients(x, desc, np.zeros((T, N, DH)), stateGradient=dS)
    dy = np.zeros((T, N, DH))
    if direction == "bidirectional":
        dy[T - 1, :, :H], dy[0, :, H:] = dS[:, :H], dS[:, H:]
    else:
        dy[0 if direction == "reverse" else T - 1] = dS
    via_source = lh.run_gradients(x, desc, dy)
    for label in via_state:
        np.testing.assert_allclose(via_state[label], via_source[label], rtol=1e-12,
                                   atol=1e-12, err_msg=label)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_returned_gradients_follow_the_given_inputs(bidirectional, rng):
    # SPEC.md section 6: one gradient per given input, in the order source, recurrentWeight,
    # inputWeight, bias, peephole, initState, initCell (run_gradients checks count, order by
    # shape and dtype); gradients of present inputs do not change when others are omitted
    # as long as the omitted ones were zero (bias, states, peephole).
    desc = rg.LSTMDescriptor(bidirectional=bidirectional)
    x = lh.make_inputs(rng, bidirectional=bidirectional, peephole="[2,4H]" if bidirectional
                       else "[D4H]", initState="[1,N,DH]", initCell="[N,DH]")
    for label in ("bias", "peephole", "initState", "initCell"):
        x[label] = np.zeros_like(x[label])
    dy, dS, dC = lh.cotangents(rng, x, desc, "dy+dS+dC")
    full = lh.run_gradients(x, desc, dy, dS, dC)
    assert list(full) == list(lh.RETURNED)
    for omitted in (("bias",), ("peephole",), ("initState", "initCell"),
                    ("bias", "peephole", "initState", "initCell")):
        some = {k: v for k, v in x.items() if k not in omitted}
        got = lh.run_gradients(some, desc, dy, dS, dC)
        assert list(got) == [k for k in lh.RETURNED if k not in omitted]
        for label in got:
            np.testing.assert_allclose(got[label], full[label], rtol=1e-12, atol=1e-12,
                                       err_msg=f"without {omitted}: d{label}")


def test_saved_tensors_fed_as_arrays_give_the_same_gradients(rng):
    # The forward in one run, its saved h/c/zState fed back as placeholders into a separate
    # gradient graph (harness.gradients), equals wiring both ops in one graph.
    desc = rg.LSTMDescriptor(bidirectional=True, forgetGateLast=True)
    x = lh.make_inputs(rng, bidirectional=True, peephole="[2,4H]", mask="[T,N,1]",
                       initCell="[1,N,DH]")
    dy, dS, dC = lh.cotangents(rng, x, desc, "dy+dS+dC")
    wired = lh.run_gradients(x, desc, dy, dS, dC)
    fed = harness.gradients("LSTM", x, desc, dy, dS, dC)
    assert list(fed) == list(wired)
    for label in wired:
        np.testing.assert_allclose(fed[label], wired[label], rtol=1e-12, atol=1e-12,
                                   err_msg=label)


@pytest.mark.parametrize("training", [False, True], ids=["training=F", "training=T"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_graph_gradients_of_h_through_lstm(bidirectional, training, rng):
    # Graph.gradients(of=h) differentiates sum(h) through LSTMGradients (with a training
    # twin of the forward op when training=False); compared with central differences.
    desc = rg.LSTMDescriptor(bidirectional=bidirectional, training=training,
                             produceCell=True)
    x = lh.make_inputs(rng, bidirectional=bidirectional, peephole="[D4H]", mask="[T,N,DH]")
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    inputs = {k: v for k, v in ph.items() if k != "source"}
    h = g.LSTM(ph["source"], **inputs, descriptor=desc)[0]
    wanted = [k for k in lh.RETURNED if k in x]
    grads = g.gradients(of=h, with_=[ph[k] for k in wanted])
    out = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=list(grads.values()))
    analytic = {k: out[grads[ph[k]]] for k in wanted}
    H = x["recurrentWeight"].shape[-1]
    loss = harness.loss_function("LSTM", desc, H, np.ones_like(lh.run_forward(x, desc)["h"]),
                                 use_reference=True)
    numeric = gradcheck.numerical_gradients(lambda a: loss({**x, **a}),
                                            {k: x[k] for k in wanted})
    gradcheck.assert_gradients_close(analytic, numeric,
                                     f"Graph.gradients LSTM bi={bidirectional} "
                                     f"training={training}")


def test_random_direction_medium_bidirectional(rng):
    # T=12, N=6, I=10, H=16, bidirectional, peephole, mask, non-zero states, all signals.
    desc = rg.LSTMDescriptor(bidirectional=True)
    x = lh.make_inputs(rng, bidirectional=True, T=12, N=6, I=10, H=16, peephole="[2,4H]",
                       mask="[T,N,DH]", scale=0.3)
    dy, dS, dC = lh.cotangents(rng, x, desc, "dy+dS+dC")
    analytic = lh.run_gradients(x, desc, dy, dS, dC)
    differentiable = {k: v for k, v in x.items() if k in lh.DIFFERENTIABLE}
    for use_reference in (False, True):
        loss = harness.loss_function("LSTM", desc, 16, dy, dS, dC, use_reference=use_reference)
        gradcheck.random_direction_check(lambda a: loss({**x, **a}), analytic, differentiable,
                                         rng, where="LSTM T=12 N=6 I=10 H=16 bi peephole mask")


def test_random_direction_medium_reverse_forget_gate_last(rng):
    desc = rg.LSTMDescriptor(reverse=True, forgetGateLast=True,
                             activation=rg.RNNActivation.sigmoid)
    x = lh.make_inputs(rng, T=10, N=5, I=7, H=12, peephole="[D4H]", mask="[T,N,1]",
                       initState="[1,N,DH]", scale=0.3)
    dy, dS, dC = lh.cotangents(rng, x, desc, "dy+dS+dC")
    analytic = lh.run_gradients(x, desc, dy, dS, dC)
    differentiable = {k: v for k, v in x.items() if k in lh.DIFFERENTIABLE}
    loss = harness.loss_function("LSTM", desc, 12, dy, dS, dC, use_reference=True)
    gradcheck.random_direction_check(lambda a: loss({**x, **a}), analytic, differentiable, rng,
                                     where="LSTM T=10 N=5 I=7 H=12 reverse forgetGateLast")


# float32 against float64 gradients on the same data. Backward accumulates over T = 6 steps
# and sums over N, T for the weight gradients (up to N·T = 18 terms of O(1) products), so
# float32 errors reach ~(I + H + N·T)·u·max|grad| ~ 1e-6·max|grad| (observed <= 3e-6 over
# 40 draws); 1e-4 relative to the largest gradient entry leaves a wide margin and still
# catches any real float32 defect (those show up at 1e-3 and above).
FLOAT32_GRADIENT_RTOL = 1e-4


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_float32_gradients_match_float64(bidirectional, rng):
    desc = rg.LSTMDescriptor(bidirectional=bidirectional)
    x32 = lh.make_inputs(rng, bidirectional=bidirectional, T=6, N=3, I=4, H=4,
                         peephole="[D4H]", mask="[T,N,DH]", scale=0.5, dtype=np.float32)
    x64 = {k: v.astype(np.float64) for k, v in x32.items()}
    dy, dS, dC = lh.cotangents(rng, x32, desc, "dy+dS+dC")
    g32 = lh.run_gradients(x32, desc, dy, dS, dC)
    g64 = lh.run_gradients(x64, desc, dy.astype(np.float64), dS.astype(np.float64),
                           dC.astype(np.float64))
    for label in g64:
        assert g32[label].dtype == np.float32
        error = gradcheck.relative_error(g32[label], g64[label])
        assert error < FLOAT32_GRADIENT_RTOL, (
            f"d{label}: float32 vs float64 differ by {error:.2e} (max abs diff "
            f"{lh.max_abs_diff(g32[label], g64[label]):.2e})")
