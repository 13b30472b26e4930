"""GRUGradients (SPEC.md section 6) against central differences in float64.

``CASES`` is an all-pairs covering list over every factor that changed the GRU's gradient
code path: each pair of values of any two factors appears in at least one case
(``test_cases_cover_all_pairs`` checks it). Every case checks every returned gradient, their
count, order and exact shapes. Pre-activations are kept at least ``KINK_MARGIN`` away from
the kinks of relu (0) and hardSigmoid (±2.5), so finite differences never straddle one; the
inputs come from a generator seeded by the case id, so every run sees the same numbers.
"""

from __future__ import annotations

import itertools
import zlib
from typing import NamedTuple

import numpy as np
import pytest

import gradcheck
import harness
import rnngraph as rg
from reference import numpy_rnn

RETURN_ORDER = ("source", "recurrentWeight", "inputWeight", "bias", "initState", "secondaryBias")
KINK_MARGIN = 1e-3  # FD moves a pre-activation by ~1e-6·|coefficient|
EPS = 1e-6


class Case(NamedTuple):
    resetAfter: bool
    flipZ: bool
    resetGateFirst: bool
    z: str  # updateGateActivation
    r: str  # resetGateActivation
    o: str  # outputGateActivation
    direction: str  # fwd, rev, bi
    mask: str  # none, full [T,N,DH], bcast [T,N,1]
    W: bool  # inputWeight given (else source is [T,N,D·3H])
    bias: bool
    init: str  # initState: none, NH ([N,DH]), 1NH ([1,N,DH])
    b2: bool  # secondaryBias given
    signal: str  # dy (sourceGradient only), dS (stateGradient only: final state), dy+dS
    T: int


CASES = [
    # resetAfter flipZ resetGateFirst  z, r, o activations  direction mask W bias init b2 signal T
    Case(False, False, False, 'none',        'hardSigmoid', 'tanh',        'bi',  'bcast', False, False, '1NH',  True,  'dy',    1),
    Case(False, False, False, 'relu',        'tanh',        'relu',        'rev', 'none',  True,  False, '1NH',  True,  'dS',    3),
    Case(False, False, False, 'relu',        'hardSigmoid', 'sigmoid',     'fwd', 'bcast', False, False, 'none', True,  'dS',    3),
    Case(False, False, False, 'tanh',        'none',        'sigmoid',     'rev', 'bcast', False, True,  'NH',   True,  'dy+dS', 1),
    Case(False, False, False, 'tanh',        'tanh',        'hardSigmoid', 'fwd', 'full',  False, True,  '1NH',  False, 'dy+dS', 3),
    Case(False, False, False, 'sigmoid',     'none',        'hardSigmoid', 'fwd', 'none',  True,  True,  '1NH',  True,  'dy',    1),
    Case(False, False, False, 'hardSigmoid', 'tanh',        'sigmoid',     'bi',  'full',  True,  False, 'none', False, 'dy',    1),
    Case(False, False, True,  'hardSigmoid', 'tanh',        'tanh',        'fwd', 'none',  True,  True,  'NH',   True,  'dy',    1),
    Case(False, True,  False, 'none',        'sigmoid',     'sigmoid',     'rev', 'none',  True,  True,  '1NH',  False, 'dy',    1),
    Case(False, True,  False, 'sigmoid',     'relu',        'tanh',        'rev', 'none',  False, False, 'none', False, 'dS',    3),
    Case(False, True,  False, 'sigmoid',     'tanh',        'hardSigmoid', 'fwd', 'bcast', False, False, 'NH',   False, 'dy+dS', 3),
    Case(False, True,  False, 'sigmoid',     'hardSigmoid', 'relu',        'rev', 'full',  False, False, 'NH',   True,  'dS',    1),
    Case(False, True,  True,  'none',        'relu',        'none',        'bi',  'bcast', True,  False, '1NH',  False, 'dy+dS', 3),
    Case(False, True,  True,  'relu',        'tanh',        'none',        'rev', 'none',  False, False, 'none', True,  'dy+dS', 1),
    Case(False, True,  True,  'hardSigmoid', 'none',        'none',        'bi',  'full',  False, True,  '1NH',  True,  'dS',    3),
    Case(False, True,  True,  'hardSigmoid', 'hardSigmoid', 'relu',        'bi',  'none',  True,  True,  'none', False, 'dy',    3),
    Case(True,  False, False, 'none',        'hardSigmoid', 'hardSigmoid', 'bi',  'full',  False, False, 'NH',   False, 'dy+dS', 3),
    Case(True,  False, False, 'relu',        'relu',        'none',        'fwd', 'full',  False, True,  '1NH',  True,  'dS',    3),
    Case(True,  False, False, 'tanh',        'relu',        'relu',        'bi',  'none',  True,  True,  '1NH',  False, 'dS',    1),
    Case(True,  False, False, 'tanh',        'sigmoid',     'tanh',        'fwd', 'full',  False, True,  '1NH',  True,  'dS',    1),
    Case(True,  False, False, 'hardSigmoid', 'sigmoid',     'relu',        'fwd', 'bcast', False, False, 'none', False, 'dy+dS', 3),
    Case(True,  False, True,  'tanh',        'hardSigmoid', 'none',        'bi',  'none',  True,  True,  '1NH',  False, 'dy+dS', 1),
    Case(True,  False, True,  'sigmoid',     'sigmoid',     'none',        'bi',  'none',  True,  False, 'NH',   True,  'dy',    3),
    Case(True,  False, True,  'hardSigmoid', 'relu',        'hardSigmoid', 'rev', 'none',  True,  True,  'NH',   True,  'dy',    1),
    Case(True,  True,  False, 'none',        'none',        'relu',        'fwd', 'none',  True,  False, 'none', False, 'dy',    3),
    Case(True,  True,  False, 'sigmoid',     'relu',        'sigmoid',     'bi',  'full',  True,  True,  '1NH',  False, 'dS',    1),
    Case(True,  True,  True,  'none',        'tanh',        'hardSigmoid', 'fwd', 'full',  True,  False, '1NH',  False, 'dS',    1),
    Case(True,  True,  True,  'relu',        'none',        'tanh',        'bi',  'bcast', True,  False, 'NH',   False, 'dy+dS', 3),
    Case(True,  True,  True,  'relu',        'sigmoid',     'hardSigmoid', 'bi',  'full',  True,  False, 'none', True,  'dy',    3),
    Case(True,  True,  True,  'tanh',        'sigmoid',     'sigmoid',     'rev', 'full',  False, False, 'none', True,  'dy',    3),
]  # fmt: skip

LEVELS = {
    "resetAfter": [False, True], "flipZ": [False, True], "resetGateFirst": [False, True],
    "z": list(numpy_rnn.ACTIVATION_NAMES), "r": list(numpy_rnn.ACTIVATION_NAMES),
    "o": list(numpy_rnn.ACTIVATION_NAMES), "direction": ["fwd", "rev", "bi"],
    "mask": ["none", "full", "bcast"], "W": [False, True], "bias": [False, True],
    "init": ["none", "NH", "1NH"], "b2": [False, True], "signal": ["dy", "dS", "dy+dS"],
    "T": [1, 3],
}


def case_id(c: Case) -> str:
    parts = [
        "resetAfter" if c.resetAfter else "resetBefore",
        "flipZ" if c.flipZ else "noflip",
        "rzo" if c.resetGateFirst else "zro",
        f"z={c.z},r={c.r},o={c.o}",
        c.direction,
        f"mask={c.mask}",
        "W" if c.W else "noW",
        "bias" if c.bias else "nobias",
        f"init={c.init}",
        "b2" if c.b2 else "nob2",
        c.signal,
        f"T{c.T}",
    ]
    return "-".join(parts)


def test_cases_cover_all_pairs():
    fields = Case._fields
    assert set(fields) == set(LEVELS)
    for c in CASES:
        for field in fields:
            assert getattr(c, field) in LEVELS[field], (case_id(c), field)
    missing = []
    for a, b in itertools.combinations(fields, 2):
        seen = {(getattr(c, a), getattr(c, b)) for c in CASES}
        missing += [(a, va, b, vb) for va in LEVELS[a] for vb in LEVELS[b] if (va, vb) not in seen]
    assert not missing, f"pairs not covered: {missing[:10]}"
    assert len({case_id(c) for c in CASES}) == len(CASES)


# --- helpers ----------------------------------------------------------------------------------

def make_rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def gate_preactivations(x, desc):
    """{gate: pre-activation [T, N, D·H]} recomputed from the reference's state sequence,
    to measure the distance to activation kinks (SPEC.md section 5)."""
    ref = harness.reference_forward("GRU", x, desc)
    h_seq = ref["h"]
    T, N = h_seq.shape[:2]
    H = x["recurrentWeight"].shape[-1]
    D = 2 if desc.bidirectional else 1
    order = ("r", "z", "o") if desc.resetGateFirst else ("z", "r", "o")
    act_r = numpy_rnn.ACTIVATION_NAMES[int(desc.resetGateActivation)]
    pre = {g: np.zeros((T, N, D * H)) for g in order}
    for d in range(D):
        reverse = d == 1 if desc.bidirectional else desc.reverse
        R = x["recurrentWeight"][d] if desc.bidirectional else x["recurrentWeight"]
        rows = slice(d * 3 * H, (d + 1) * 3 * H)
        cols = slice(d * H, (d + 1) * H)
        if "inputWeight" in x:
            xp = x["source"] @ x["inputWeight"][rows].T
        else:
            xp = x["source"][..., rows]
        if "bias" in x:
            xp = xp + x["bias"][rows]
        init = x.get("initState", np.zeros((N, D * H))).reshape(N, D * H)[:, cols]
        mask = np.broadcast_to(x.get("mask", 1.0), (T, N, D * H))[..., cols]
        b2 = x["secondaryBias"][cols] if "secondaryBias" in x else 0.0
        for t in range(T):
            prev = t + 1 if reverse else t - 1
            hp = init if prev in (-1, T) else h_seq[prev][:, cols]
            hm = hp * mask[t]
            blocks = {g: (xp[t][:, k * H:(k + 1) * H], R[k * H:(k + 1) * H])
                      for k, g in enumerate(order)}
            for g in ("z", "r"):
                x_g, R_g = blocks[g]
                pre[g][t][:, cols] = x_g + hm @ R_g.T
            r = numpy_rnn.activation(act_r, pre["r"][t][:, cols])
            xo, Ro = blocks["o"]
            if desc.resetAfter:
                pre["o"][t][:, cols] = xo + r * (hm @ Ro.T + b2)
            else:
                pre["o"][t][:, cols] = xo + (hm * r) @ Ro.T
    return pre


def kink_distance(x, desc):
    """Smallest distance of any relu / hardSigmoid pre-activation to its kink."""
    pre = gate_preactivations(x, desc)
    slots = {"z": desc.updateGateActivation, "r": desc.resetGateActivation,
             "o": desc.outputGateActivation}
    distance = np.inf
    for gate, act in slots.items():
        name = numpy_rnn.ACTIVATION_NAMES[int(act)]
        if name == "relu":
            distance = min(distance, np.abs(pre[gate]).min())
        elif name == "hardSigmoid":
            distance = min(distance, np.abs(np.abs(pre[gate]) - 2.5).min())
    return distance


def case_descriptor(c: Case):
    act = rg.RNNActivation
    return rg.GRUDescriptor(resetAfter=c.resetAfter, flipZ=c.flipZ,
                            resetGateFirst=c.resetGateFirst, reverse=c.direction == "rev",
                            bidirectional=c.direction == "bi",
                            updateGateActivation=getattr(act, c.z),
                            resetGateActivation=getattr(act, c.r),
                            outputGateActivation=getattr(act, c.o))


def case_inputs(c: Case, desc, *, N=2, I=3, H=2):
    """Inputs for a case, drawn again (deterministically) until no pre-activation sits within
    KINK_MARGIN of a kink."""
    D = 2 if c.direction == "bi" else 1
    for attempt in range(50):
        rng = make_rng(case_id(c), attempt)
        x = harness.make_inputs("GRU", rng, T=c.T, N=N, I=I, H=H, bidirectional=D == 2,
                                inputWeight=c.W, bias=c.bias, initState=c.init != "none",
                                mask=c.mask == "full", secondaryBias=c.b2)
        if c.mask == "bcast":
            x["mask"] = (rng.random((c.T, N, 1)) > 0.3).astype(np.float64)
        if c.init == "1NH":
            x["initState"] = x["initState"].reshape(1, N, D * H)
        if kink_distance(x, desc) > KINK_MARGIN:
            return x
    raise AssertionError("no input draw kept clear of the activation kinks")


def run_gradients(x, desc, dy, dS=None):
    """Training forward, then GRUGradients on placeholders. Checks the returned list's count
    and shapes and labels it by SPEC.md's order (positionally, not by the op's own labels)."""
    training = desc.copy()
    training.training = True
    saved = harness.forward("GRU", x, training)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    extra = {"sourceGradient": dy, "zState": saved["zState"], "outputFwd": saved["h"]}
    if dS is not None:
        extra["stateGradient"] = dS
    ph |= {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in extra.items()}
    grads = g.GRUGradients(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                           descriptor=desc)
    expected = [label for label in RETURN_ORDER if label in x]
    assert len(grads) == len(expected), f"{len(grads)} gradients for {expected}"
    for label, t in zip(expected, grads):
        assert t.shape == x[label].shape, f"d{label}: symbolic shape {t.shape}"
    result = g.run(feeds={ph[k]: v for k, v in (x | extra).items()}, targetTensors=grads)
    out = {label: result[t] for label, t in zip(expected, grads)}
    for label, value in out.items():
        assert value.shape == x[label].shape and value.dtype == x[label].dtype, label
    return out


def cotangents(c: Case, x, H, rng):
    T, N = x["source"].shape[:2]
    D = 2 if c.direction == "bi" else 1
    dy = rng.standard_normal((T, N, D * H)) if "dy" in c.signal else np.zeros((T, N, D * H))
    dS = rng.standard_normal((N, D * H)) if "dS" in c.signal else None
    return dy, dS


# --- the covering list ------------------------------------------------------------------------

def test_preactivation_helper_reproduces_zstate():
    """The kink guard is only as good as gate_preactivations: activated, they are zState."""
    for c in CASES:
        desc = case_descriptor(c)
        x = case_inputs(c, desc)
        pre = gate_preactivations(x, desc)
        z_state = harness.reference_forward("GRU", x, desc)["zState"]
        H, D = 2, 2 if c.direction == "bi" else 1
        order = ("r", "z", "o") if c.resetGateFirst else ("z", "r", "o")
        for d in range(D):
            for k, gate in enumerate(order):
                columns = slice(d * H, (d + 1) * H)
                activated = numpy_rnn.activation(getattr(c, gate), pre[gate][..., columns])
                block = z_state[..., (3 * d + k) * H:(3 * d + k + 1) * H]
                np.testing.assert_allclose(activated, block, rtol=0, atol=1e-14)


@pytest.mark.parametrize("c", CASES, ids=case_id)
def test_gradients_match_finite_differences(c):
    H = 2
    desc = case_descriptor(c)
    x = case_inputs(c, desc, H=H)
    dy, dS = cotangents(c, x, H, make_rng("cotangents", case_id(c)))
    analytic = run_gradients(x, desc, dy, dS)
    differentiable = {k: v.copy() for k, v in x.items() if k != "mask"}
    # Differences of rnngraph's own forward, and of the NumPy loop reference's.
    for use_reference in (False, True):
        loss = harness.loss_function("GRU", desc, H, dy, dS, use_reference=use_reference)
        numeric = gradcheck.numerical_gradients(lambda a, loss=loss: loss(x | a),
                                                differentiable, eps=EPS)
        where = f"{case_id(c)}{' (reference)' if use_reference else ''}"
        gradcheck.assert_gradients_close(analytic, numeric, where)
    assert max(np.abs(g).max() for g in analytic.values()) > 0.01
    if "secondaryBias" in x and not c.resetAfter:
        assert np.all(analytic["secondaryBias"] == 0)  # exactly zero, not just small
    if c.signal == "dS":  # final state only: it must reach the earliest inputs
        assert np.abs(analytic["recurrentWeight" if c.T > 1 else "source"]).max() > 0


# --- order, count, shapes, zero secondaryBias gradient ----------------------------------------

@pytest.mark.parametrize("given", [
    (),
    ("inputWeight",),
    ("bias", "secondaryBias"),
    ("initState",),
    ("inputWeight", "bias", "initState", "secondaryBias"),
], ids=lambda g: "+".join(g) or "required-only")
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_returned_gradients_order_count_and_shapes(given, bidirectional):
    H, T, N = 3, 2, 2
    rng = make_rng("order", given, bidirectional)
    x = harness.make_inputs("GRU", rng, T=T, N=N, I=4, H=H, bidirectional=bidirectional,
                            inputWeight="inputWeight" in given, bias="bias" in given,
                            initState="initState" in given,
                            secondaryBias="secondaryBias" in given)
    desc = rg.GRUDescriptor(bidirectional=bidirectional, resetAfter=True)
    D = 2 if bidirectional else 1
    dy = rng.standard_normal((T, N, D * H))
    grads = run_gradients(x, desc, dy)
    assert list(grads) == [k for k in RETURN_ORDER if k in x]
    expected_shapes = {"source": (T, N, 4 if "inputWeight" in given else D * 3 * H),
                       "recurrentWeight": (2, 3 * H, H) if bidirectional else (3 * H, H),
                       "inputWeight": (D * 3 * H, 4), "bias": (D * 3 * H,),
                       "initState": (N, D * H), "secondaryBias": (D * H,)}
    for label, g in grads.items():
        assert g.shape == expected_shapes[label]
    # The same through the harness (which reads the op's own labels).
    labelled = harness.gradients("GRU", x, desc, dy)
    assert list(labelled) == list(grads)
    for label in grads:
        np.testing.assert_array_equal(labelled[label], grads[label])


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_secondary_bias_gradient_is_exactly_zero_with_reset_before(bidirectional):
    H, T, N = 2, 4, 3
    rng = make_rng("b2zero", bidirectional)
    x = harness.make_inputs("GRU", rng, T=T, N=N, H=H, bidirectional=bidirectional, mask=True,
                            secondaryBias=True)
    D = 2 if bidirectional else 1
    dy, dS = rng.standard_normal((T, N, D * H)), rng.standard_normal((N, D * H))
    before = run_gradients(x, rg.GRUDescriptor(bidirectional=bidirectional), dy, dS)
    assert before["secondaryBias"].shape == (D * H,)
    assert np.all(before["secondaryBias"] == 0)
    # The other gradients do not depend on b2 at all.
    without = {k: v for k, v in x.items() if k != "secondaryBias"}
    others = run_gradients(without, rg.GRUDescriptor(bidirectional=bidirectional), dy, dS)
    for label in others:
        np.testing.assert_array_equal(before[label], others[label])
    after = run_gradients(x, rg.GRUDescriptor(bidirectional=bidirectional, resetAfter=True),
                          dy, dS)
    assert np.abs(after["secondaryBias"]).min() > 0


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_state_layouts_give_the_same_gradients(bidirectional):
    H, T, N = 2, 3, 2
    rng = make_rng("layouts", bidirectional)
    x = harness.make_inputs("GRU", rng, T=T, N=N, H=H, bidirectional=bidirectional,
                            secondaryBias=True)
    D = 2 if bidirectional else 1
    dy, dS = rng.standard_normal((T, N, D * H)), rng.standard_normal((N, D * H))
    desc = rg.GRUDescriptor(bidirectional=bidirectional, resetAfter=True)
    flat = run_gradients(x, desc, dy, dS)
    x3 = dict(x, initState=x["initState"].reshape(1, N, D * H))
    nested = run_gradients(x3, desc, dy, dS.reshape(1, N, D * H))
    assert nested["initState"].shape == (1, N, D * H)
    for label in flat:
        np.testing.assert_array_equal(nested[label].reshape(flat[label].shape), flat[label])


def test_gradient_op_ignores_the_training_flag():
    H, T, N = 2, 3, 2
    rng = make_rng("training-flag")
    x = harness.make_inputs("GRU", rng, T=T, N=N, H=H, mask=True, secondaryBias=True)
    dy, dS = rng.standard_normal((T, N, H)), rng.standard_normal((N, H))
    plain = run_gradients(x, rg.GRUDescriptor(resetAfter=True), dy, dS)
    training = run_gradients(x, rg.GRUDescriptor(resetAfter=True, training=True), dy, dS)
    for label in plain:
        np.testing.assert_array_equal(plain[label], training[label])


# --- Graph.gradients on a GRU -----------------------------------------------------------------

@pytest.mark.parametrize("resetAfter", [False, True], ids=["resetBefore", "resetAfter"])
def test_graph_gradients_equal_the_gradient_op(resetAfter):
    H, T, N = 2, 3, 2
    rng = make_rng("autodiff", resetAfter)
    x = harness.make_inputs("GRU", rng, T=T, N=N, H=H, bidirectional=True, mask=True,
                            secondaryBias=True)
    desc = rg.GRUDescriptor(bidirectional=True, resetAfter=resetAfter, flipZ=True)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    (h,) = g.GRU(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                 descriptor=desc)
    wrt = [ph[k] for k in RETURN_ORDER]
    grads = g.gradients(of=h, with_=wrt)
    result = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=[grads[t] for t in wrt])
    direct = run_gradients(x, desc, np.ones((T, N, 2 * H)))  # d(sum h)/d inputs
    for label, t in zip(RETURN_ORDER, wrt):
        np.testing.assert_allclose(result[grads[t]], direct[label], rtol=0, atol=1e-14)


# --- medium shapes: one random direction ------------------------------------------------------

@pytest.mark.parametrize("flags", [
    dict(resetAfter=False),
    dict(resetAfter=True),
    dict(resetAfter=False, flipZ=True, resetGateFirst=True, bidirectional=True),
    dict(resetAfter=True, flipZ=True, resetGateFirst=True, bidirectional=True),
], ids=lambda f: "-".join(k if v is True else f"{k}={v}" for k, v in f.items()))
def test_medium_random_direction(flags):
    T, N, I, H = 12, 5, 7, 6
    rng = make_rng("medium", sorted(flags.items()))
    desc = rg.GRUDescriptor(**flags)
    D = 2 if desc.bidirectional else 1
    x = harness.make_inputs("GRU", rng, T=T, N=N, I=I, H=H, bidirectional=desc.bidirectional,
                            mask=True, secondaryBias=True, scale=0.4)
    dy, dS = rng.standard_normal((T, N, D * H)), rng.standard_normal((N, D * H))
    analytic = run_gradients(x, desc, dy, dS)
    differentiable = {k: v for k, v in x.items() if k != "mask"}
    loss = harness.loss_function("GRU", desc, H, dy, dS)
    gradcheck.random_direction_check(lambda a: loss(x | a), analytic, differentiable, rng,
                                     where=f"GRU medium {flags}")


# --- float32 against float64 ------------------------------------------------------------------

@pytest.mark.parametrize("resetAfter", [False, True], ids=["resetBefore", "resetAfter"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_float32_gradients_match_float64(bidirectional, resetAfter):
    # O(1) inputs, T = 8: float32 round-off grows to ~1e-7·max(1, max|g|) (measured: at most
    # 3.3e-7); the bound 4e-6·max(1, max|g|) leaves a 10x margin.
    T, N, I, H = 8, 3, 5, 4
    rng = make_rng("f32grad", bidirectional, resetAfter)
    D = 2 if bidirectional else 1
    x64 = harness.make_inputs("GRU", rng, T=T, N=N, I=I, H=H, bidirectional=bidirectional,
                              mask=True, secondaryBias=True)
    x32 = {k: v.astype(np.float32) for k, v in x64.items()}
    x64 = {k: v.astype(np.float64) for k, v in x32.items()}
    dy = rng.standard_normal((T, N, D * H)).astype(np.float32)
    dS = rng.standard_normal((N, D * H)).astype(np.float32)
    desc = rg.GRUDescriptor(bidirectional=bidirectional, resetAfter=resetAfter)
    g64 = run_gradients(x64, desc, dy.astype(np.float64), dS.astype(np.float64))
    g32 = harness.gradients("GRU", x32, desc, dy, dS)
    assert list(g32) == list(g64)
    for label in g64:
        assert g32[label].dtype == np.float32 and g32[label].shape == g64[label].shape
        error = gradcheck.relative_error(g32[label], g64[label])
        assert error < 4e-6, f"d{label}: float32 vs float64 {error:.2e}"
