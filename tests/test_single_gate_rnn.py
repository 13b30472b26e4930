"""singleGateRNN and singleGateRNNGradients (SPEC.md sections 1-6).

Forward against the NumPy loop reference over every option; gradients against central
differences (float64) over a covering list of option combinations; against torch.nn.RNN;
float32 against float64; a random-direction check on a medium shape.

Inputs are drawn from explicit seeds derived from the test's id (crc32), so every run sees
the same numbers. For relu and hardSigmoid the draw is repeated (with the next seed) until
no pre-activation lies within ``KINK_MARGIN`` of a kink, so finite differences never straddle
one: the result is fixed by the id, not by chance.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest
import torch

import gradcheck
import harness
import rnngraph as rg
from reference import numpy_rnn, torch_mapping

CELL = "singleGateRNN"
ACTIVATIONS = ("none", "relu", "tanh", "sigmoid", "hardSigmoid")
DIRECTIONS = {"fwd": {}, "reverse": {"reverse": True}, "bi": {"bidirectional": True},
              "reverse-bi": {"reverse": True, "bidirectional": True}}
MASKS = ("nomask", "mask", "mask1ND", "maskN1", "maskT11")
INIT_STATES = ("noh0", "h0", "h0x3d")
KINK_MARGIN = 1e-3  # FD perturbs pre-activations by ~1e-6; stay far from relu/hardSigmoid kinks
KINKS = {"relu": (0.0,), "hardSigmoid": (-2.5, 2.5)}  # 0.2·x + 0.5 hits 0 and 1 at x = ∓2.5


def seeded(text: str) -> np.random.Generator:
    """A generator fixed by ``text`` (conftest's ``rng`` depends on PYTHONHASHSEED)."""
    return np.random.default_rng(zlib.crc32(text.encode()))


def parse(case_id: str) -> dict:
    """'tanh-reverse-bi-mask1ND-noW-nobias-h0x3d-dS' -> the options it spells.

    Tokens: an activation; fwd / reverse / bi; a mask kind (MASKS); W / noW; bias / nobias;
    noh0 / h0 ([N, D·H]) / h0x3d ([1, N, D·H]); dS / nodS (stateGradient); dy0 (zero
    sourceGradient: the signal comes through the final state only); T1, N1; H<h>I<i>.
    """
    case = {"activation": "tanh", "reverse": False, "bidirectional": False, "mask": "nomask",
            "inputWeight": True, "bias": True, "initState": "noh0", "stateGradient": False,
            "zero_dy": False, "T": 4, "N": 2, "I": 3, "H": 2}
    for token in case_id.split("-"):
        if token in ACTIVATIONS:
            case["activation"] = token
        elif token == "reverse":
            case["reverse"] = True
        elif token == "bi":
            case["bidirectional"] = True
        elif token == "fwd":
            pass
        elif token in MASKS:
            case["mask"] = token
        elif token in ("W", "noW"):
            case["inputWeight"] = token == "W"
        elif token in ("bias", "nobias"):
            case["bias"] = token == "bias"
        elif token in INIT_STATES:
            case["initState"] = token
        elif token in ("dS", "nodS"):
            case["stateGradient"] = token == "dS"
        elif token == "dy0":
            case["zero_dy"] = True
        elif token in ("T1", "N1"):
            case[token[0]] = 1
        elif token.startswith("H") and "I" in token:
            case["H"], case["I"] = (int(v) for v in token[1:].split("I"))
        else:
            raise ValueError(f"unknown token {token!r} in {case_id!r}")
    return case


def descriptor_for(case, **extra) -> rg.SingleGateRNNDescriptor:
    return rg.SingleGateRNNDescriptor(activation=getattr(rg.RNNActivation, case["activation"]),
                                      reverse=case["reverse"],
                                      bidirectional=case["bidirectional"], **extra)


def make_mask(kind, rng, T, N, DH):
    """A constant mask of ``kind`` holding 0, 0.5 and 1 (0.5 shows it is a multiplier)."""
    shape = {"mask": (T, N, DH), "mask1ND": (1, N, DH), "maskN1": (N, 1), "maskT11": (T, 1, 1)}[kind]
    mask = rng.choice([0.0, 0.5, 1.0], size=shape)
    flat = mask.reshape(-1)
    flat[0] = 0.5  # never all ones, never all zeros
    if flat.size > 1:
        flat[-1] = 0.0
    return mask


def draw_inputs(case, rng, scale):
    T, N, I, H = case["T"], case["N"], case["I"], case["H"]
    D = 2 if case["bidirectional"] else 1

    def normal(*shape, s=scale):
        return s * rng.standard_normal(shape)

    x = {"source": normal(T, N, I if case["inputWeight"] else D * H)}
    x["recurrentWeight"] = normal(2, H, H, s=0.6) if D == 2 else normal(H, H, s=0.6)
    if case["inputWeight"]:
        x["inputWeight"] = normal(D * H, I, s=0.6)
    if case["bias"]:
        x["bias"] = normal(D * H)
    if case["initState"] == "h0":
        x["initState"] = normal(N, D * H)
    elif case["initState"] == "h0x3d":
        x["initState"] = normal(1, N, D * H)
    if case["mask"] != "nomask":
        x["mask"] = make_mask(case["mask"], rng, T, N, D * H)
    return x


def kink_distance(activation, z) -> float:
    kinks = KINKS.get(activation, ())
    if not kinks or z.size == 0:
        return np.inf
    return float(min(np.min(np.abs(z - k)) for k in kinks))


def inputs_for(case, case_id):
    """Inputs for ``case``, redrawn with the next seed until pre-activations avoid kinks.
    hardSigmoid gets a larger scale so that both its saturated and linear parts are hit."""
    scale = 2.0 if case["activation"] == "hardSigmoid" else 0.6
    desc = descriptor_for(case)
    for attempt in range(100):
        x = draw_inputs(case, seeded(f"{case_id}#{attempt}"), scale)
        z = harness.reference_forward(CELL, x, desc)["zState"]
        if kink_distance(case["activation"], z) > KINK_MARGIN:
            return x
    raise AssertionError(f"{case_id}: no draw kept pre-activations away from kinks")


# ---------------------------------------------------------------------------------------
# Forward against the reference: every activation × direction × mask × optional input
# ---------------------------------------------------------------------------------------

OPTIONALS = [f"{w}-{b}-{h}" for w, b, h in itertools.product(("W", "noW"), ("bias", "nobias"),
                                                              INIT_STATES)]


@pytest.mark.parametrize("optionals", OPTIONALS)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_forward_matches_reference(activation, direction, mask, optionals):
    case_id = f"{activation}-{direction}-{mask}-{optionals}"
    case = parse(case_id)
    x = draw_inputs(case, seeded(case_id), scale=2.0 if activation == "hardSigmoid" else 0.8)
    out = harness.forward(CELL, x, descriptor_for(case, training=True))
    expected = harness.reference_forward(CELL, x, descriptor_for(case))
    D = 2 if case["bidirectional"] else 1
    shape = (case["T"], case["N"], D * case["H"])
    assert out["h"].shape == shape and out["zState"].shape == shape
    assert out["h"].dtype == np.float64 and out["zState"].dtype == np.float64
    np.testing.assert_allclose(out["zState"], expected["zState"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["h"], expected["h"], rtol=1e-12, atol=1e-12)
    # zState is the pre-activation: h = act(zState) exactly as SPEC.md section 2 defines act.
    np.testing.assert_allclose(out["h"], numpy_rnn.activation(activation, out["zState"]),
                               rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_training_false_returns_h_only_and_same_h(activation):
    case_id = f"{activation}-bi-mask-W-bias-h0"
    case = parse(case_id)
    x = draw_inputs(case, seeded(case_id), scale=1.0)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    source = ph.pop("source")
    inference = g.singleGateRNN(source, **ph, descriptor=descriptor_for(case))
    training = g.singleGateRNN(source, **ph, descriptor=descriptor_for(case, training=True))
    assert isinstance(inference, list) and len(inference) == 1
    assert isinstance(training, list) and len(training) == 2
    feeds = {source: x["source"], **{ph[k]: x[k] for k in ph}}
    out = g.run(feeds=feeds, targetTensors=[inference[0], *training])
    np.testing.assert_array_equal(out[inference[0]], out[training[0]])


def test_default_descriptor_is_relu_forward():
    """descriptor=None means SingleGateRNNDescriptor(): relu, forward, [h] only."""
    case_id = "relu-fwd-W-bias-h0"
    case = parse(case_id)
    x = draw_inputs(case, seeded(case_id), scale=1.0)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    source = ph.pop("source")
    outputs = g.singleGateRNN(source, **ph)
    assert len(outputs) == 1
    h = g.run(feeds={source: x["source"], **{ph[k]: x[k] for k in ph}}, targetTensors=outputs)
    expected = numpy_rnn.single_gate_rnn(x["source"], x["recurrentWeight"], x["inputWeight"],
                                         x["bias"], x["initState"])["h"]
    assert np.any(expected == 0) and np.any(expected > 0)  # relu really clipped something
    np.testing.assert_allclose(h[outputs[0]], expected, rtol=1e-12, atol=1e-12)


def test_reverse_stores_state_from_x_t_at_out_t():
    """SPEC.md section 4 (pinned): reverse starts at t = T-1 from initState; out[0] is the
    final state. With R = 0 and activation none, out[t] = x'[t] independent of order, so use
    R = identity: out[t] = x[t] + out[t+1] (reverse), a running sum from the end."""
    T, N, H = 5, 1, 1
    source = np.arange(1.0, T + 1).reshape(T, N, H)
    h0 = np.array([[100.0]])
    desc = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.none, reverse=True)
    out = harness.forward(CELL, {"source": source, "recurrentWeight": np.eye(1),
                                 "initState": h0}, desc)["h"]
    expected = 100.0 + np.cumsum(source[::-1, 0, 0])[::-1]
    np.testing.assert_allclose(out[:, 0, 0], expected)


MASK_LAYOUTS = {"scalar": lambda T, N, DH: (), "D*H": lambda T, N, DH: (DH,),
                "1": lambda T, N, DH: (1,), "T-1-1": lambda T, N, DH: (T, 1, 1),
                "1-1-D*H": lambda T, N, DH: (1, 1, DH), "N-D*H": lambda T, N, DH: (N, DH),
                "N-1": lambda T, N, DH: (N, 1), "T-N-1": lambda T, N, DH: (T, N, 1)}


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("layout", list(MASK_LAYOUTS))
def test_every_broadcastable_mask_layout(layout, bidirectional):
    """SPEC.md section 1: the mask is anything broadcastable to [T, N, D·H], a scalar
    included. Forward against the reference, gradients against finite differences."""
    T, N, I, H = 3, 2, 3, 2
    D = 2 if bidirectional else 1
    rng = seeded(f"mask-layout-{layout}-{bidirectional}")
    x = harness.make_inputs(CELL, rng, T=T, N=N, I=I, H=H, bidirectional=bidirectional)
    shape = MASK_LAYOUTS[layout](T, N, D * H)
    x["mask"] = np.asarray(rng.choice([0.0, 0.5, 1.0], size=shape))
    x["mask"].reshape(-1)[0] = 0.5  # never all ones
    desc = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh,
                                      bidirectional=bidirectional)
    out = harness.forward(CELL, x, desc)["h"]
    np.testing.assert_allclose(out, harness.reference_forward(CELL, x, desc)["h"], rtol=1e-12,
                               atol=1e-12)
    dy = rng.standard_normal((T, N, D * H))
    dS = rng.standard_normal((N, D * H))
    analytic = harness.gradients(CELL, x, desc, dy, dS)
    assert "mask" not in analytic
    loss = harness.loss_function(CELL, desc, H, dy, dS, use_reference=True)
    differentiable = {k: v for k, v in x.items() if k != "mask"}
    numeric = gradcheck.numerical_gradients(lambda a: loss({**x, **a}), differentiable)
    gradcheck.assert_gradients_close(analytic, numeric, f"mask {layout} bi={bidirectional}")


# ---------------------------------------------------------------------------------------
# Gradients against central differences
# ---------------------------------------------------------------------------------------

# Every pair of values of (activation, direction, mask, W, bias, initState, stateGradient)
# occurs in some row (test_gradient_cases_cover_all_pairs checks it); activation × mask is
# covered completely. Then the cases the design notes name: the signal through the final
# state only (dy0), T = 1, N = 1, H > I, reverse together with bidirectional (reverse is
# ignored), nothing optional at all.
PAIRWISE_CASES = [
    "none-fwd-nomask-W-bias-noh0-dS",
    "none-reverse-mask-noW-nobias-h0-nodS",
    "none-bi-mask1ND-W-bias-h0x3d-nodS",
    "none-fwd-maskN1-noW-nobias-h0x3d-dS",
    "none-reverse-maskT11-W-bias-h0-dS",
    "relu-bi-nomask-noW-nobias-noh0-nodS",
    "relu-fwd-mask-W-bias-h0-dS",
    "relu-reverse-mask1ND-W-nobias-noh0-dS",
    "relu-reverse-maskN1-W-bias-h0x3d-nodS",
    "relu-fwd-maskT11-noW-bias-noh0-nodS",
    "tanh-bi-nomask-W-bias-h0-dS",
    "tanh-fwd-mask-noW-nobias-noh0-nodS",
    "tanh-fwd-mask1ND-noW-bias-h0-dS",
    "tanh-reverse-maskN1-W-bias-noh0-dS",
    "tanh-bi-maskT11-W-nobias-h0x3d-dS",
    "sigmoid-reverse-nomask-W-bias-h0x3d-dS",
    "sigmoid-bi-mask-noW-nobias-noh0-nodS",
    "sigmoid-fwd-mask1ND-W-bias-h0-dS",
    "sigmoid-bi-maskN1-W-bias-h0-dS",
    "sigmoid-fwd-maskT11-W-bias-noh0-dS",
    "hardSigmoid-fwd-nomask-W-bias-noh0-dS",
    "hardSigmoid-reverse-mask-noW-nobias-h0x3d-nodS",
    "hardSigmoid-bi-mask1ND-W-bias-h0-dS",
    "hardSigmoid-fwd-maskN1-W-bias-noh0-dS",
    "hardSigmoid-fwd-maskT11-W-bias-noh0-dS",
]
SPECIAL_CASES = [
    "tanh-fwd-mask-W-bias-h0-dS-dy0",
    "relu-reverse-nomask-W-nobias-h0-dS-dy0",
    "sigmoid-bi-mask-noW-bias-h0x3d-dS-dy0",
    "hardSigmoid-bi-nomask-W-bias-h0-dS-dy0",
    "tanh-fwd-nomask-W-bias-h0-dS-T1",
    "relu-bi-mask-W-bias-h0-dS-T1",
    "sigmoid-reverse-mask-W-nobias-h0x3d-dS-N1",
    "none-bi-nomask-noW-bias-h0-nodS-N1",
    "tanh-bi-mask-W-bias-h0-dS-T1-N1",
    "tanh-reverse-mask-W-bias-h0-dS-H4I2",
    "relu-bi-maskN1-W-nobias-h0-dS-H4I2",
    "tanh-reverse-bi-mask-W-bias-h0-dS",
    "tanh-fwd-nomask-noW-nobias-noh0-nodS",
    "hardSigmoid-reverse-bi-nomask-noW-nobias-noh0-dS",
]
FACTORS = (ACTIVATIONS, ("fwd", "reverse", "bi"), MASKS, ("W", "noW"), ("bias", "nobias"),
           INIT_STATES, ("dS", "nodS"))


def test_gradient_cases_cover_all_pairs():
    rows = [case_id.split("-") for case_id in PAIRWISE_CASES]
    for row in rows:
        assert len(row) == len(FACTORS) and all(v in f for v, f in zip(row, FACTORS)), row
    for i, j in itertools.combinations(range(len(FACTORS)), 2):
        seen = {(row[i], row[j]) for row in rows}
        missing = set(itertools.product(FACTORS[i], FACTORS[j])) - seen
        assert not missing, f"factors {i},{j}: pairs {sorted(missing)} not covered"


def expected_returned(case):
    labels = ["source", "recurrentWeight"]
    labels += ["inputWeight"] if case["inputWeight"] else []
    labels += ["bias"] if case["bias"] else []
    labels += ["initState"] if case["initState"] != "noh0" else []
    return labels


@pytest.mark.parametrize("case_id", PAIRWISE_CASES + SPECIAL_CASES)
def test_gradients_match_finite_differences(case_id):
    case = parse(case_id)
    x = inputs_for(case, case_id)
    desc = descriptor_for(case)
    T, N, H = case["T"], case["N"], case["H"]
    DH = (2 if case["bidirectional"] else 1) * H
    rng = seeded(case_id + "/cotangents")
    dy = np.zeros((T, N, DH)) if case["zero_dy"] else rng.standard_normal((T, N, DH))
    dS = rng.standard_normal((N, DH)) if case["stateGradient"] else None

    analytic = harness.gradients(CELL, x, desc, dy, dS)
    assert list(analytic) == expected_returned(case)
    for label, grad in analytic.items():
        assert grad.shape == x[label].shape, label
    if case["zero_dy"]:  # the final state alone carries the signal back
        assert np.any(analytic["source"] != 0) and np.any(analytic["recurrentWeight"] != 0)
        # (relu's and hardSigmoid's flat parts may cut a path back to initState)
        if case["activation"] not in ("relu", "hardSigmoid"):
            assert all(np.any(g != 0) for g in analytic.values())

    differentiable = {k: v for k, v in x.items() if k != "mask"}
    for use_reference in (True, False):
        loss = harness.loss_function(CELL, desc, H, dy, dS, use_reference=use_reference)
        numeric = gradcheck.numerical_gradients(lambda a, loss=loss: loss({**x, **a}),
                                                differentiable)
        where = f"{case_id} (FD of {'reference' if use_reference else 'rnngraph'})"
        gradcheck.assert_gradients_close(analytic, numeric, where)


def test_hard_sigmoid_cases_hit_both_regions():
    """The hardSigmoid draws above really exercise the saturated (zero-gradient) parts."""
    for case_id in [c for c in PAIRWISE_CASES + SPECIAL_CASES if c.startswith("hardSigmoid")]:
        case = parse(case_id)
        z = harness.reference_forward(CELL, inputs_for(case, case_id), descriptor_for(case))["zState"]
        assert np.any(np.abs(z) > 2.5) and np.any(np.abs(z) < 2.5), case_id


# ---------------------------------------------------------------------------------------
# The returned list: order, count, shapes
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stateGradient", [True, False], ids=["dS", "nodS"])
@pytest.mark.parametrize("mask", [True, False], ids=["mask", "nomask"])
@pytest.mark.parametrize("initState", INIT_STATES)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("inputWeight", [True, False], ids=["W", "noW"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_returned_list_order_count_and_shapes(bidirectional, inputWeight, bias, initState, mask,
                                              stateGradient):
    """One gradient per given input in SPEC.md order (source, recurrentWeight, inputWeight,
    bias, initState), none for mask / stateGradient / sourceGradient / zState, each shaped like
    its input. Shapes all differ (T, N, I, H = 3, 2, 5, 4) so a swap cannot go unnoticed.
    Values: equal to the gradients with every optional given (absent bias and initState
    filled in as zeros, which SPEC.md says they mean)."""
    T, N, I, H = 3, 2, 5, 4
    D = 2 if bidirectional else 1
    rng = seeded(f"order-{bidirectional}-{inputWeight}-{bias}-{initState}-{mask}-{stateGradient}")
    x = {"source": 0.5 * rng.standard_normal((T, N, I if inputWeight else D * H)),
         "recurrentWeight": 0.5 * rng.standard_normal((2, H, H) if bidirectional else (H, H)),
         "inputWeight": 0.5 * rng.standard_normal((D * H, I)),
         "bias": 0.5 * rng.standard_normal(D * H),
         "initState": 0.5 * rng.standard_normal((N, D * H)),
         "mask": (rng.random((T, N, D * H)) > 0.3).astype(float)}
    dy = rng.standard_normal((T, N, D * H))
    dS = rng.standard_normal((N, D * H))
    desc = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh, bidirectional=bidirectional)

    given = {"source": x["source"], "recurrentWeight": x["recurrentWeight"]}
    if inputWeight:
        given["inputWeight"] = x["inputWeight"]
    if bias:
        given["bias"] = x["bias"]
    if initState == "h0":
        given["initState"] = x["initState"]
    elif initState == "h0x3d":
        given["initState"] = x["initState"].reshape(1, N, D * H)
    if mask:
        given["mask"] = x["mask"]

    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in given.items()}
    train = desc.copy()
    train.training = True
    _, zState = g.singleGateRNN(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                                descriptor=train)
    dy_t = g.placeholder(shape=dy.shape, dataType=rg.float64, name="dy")
    dS_t = g.placeholder(shape=dS.shape, dataType=rg.float64, name="dS") if stateGradient else None
    grads = g.singleGateRNNGradients(
        ph["source"], recurrentWeight=ph["recurrentWeight"], sourceGradient=dy_t, zState=zState,
        stateGradient=dS_t, inputWeight=ph.get("inputWeight"), bias=ph.get("bias"),
        initState=ph.get("initState"), mask=ph.get("mask"), descriptor=desc)

    labels = [k for k in ("source", "recurrentWeight", "inputWeight", "bias", "initState")
              if k in given]
    assert isinstance(grads, list) and len(grads) == len(labels)
    for tensor, label in zip(grads, labels):
        assert tensor.shape == given[label].shape, label  # build-time shape
        assert tensor.dataType == rg.float64
    feeds = {ph[k]: v for k, v in given.items()} | {dy_t: dy}
    if stateGradient:
        feeds[dS_t] = dS
    out = g.run(feeds=feeds, targetTensors=grads)
    assert len(out) == len(labels)

    full = dict(given)
    full["bias"] = given.get("bias", np.zeros(D * H))
    full["initState"] = given.get("initState", np.zeros((N, D * H))).reshape(N, D * H)
    baseline = harness.gradients(CELL, full, desc, dy, dS if stateGradient else None)
    for tensor, label in zip(grads, labels):
        value = out[tensor]
        assert value.shape == given[label].shape, label
        np.testing.assert_allclose(value, baseline[label].reshape(value.shape), rtol=1e-12,
                                   atol=1e-13, err_msg=label)


# ---------------------------------------------------------------------------------------
# Against torch.nn.RNN
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_matches_torch_rnn(nonlinearity, bidirectional):
    """Outputs and every gradient of L = Σ out·dy + Σ h_n·dS, torch autograd vs rnngraph."""
    T, N, I, H = 5, 3, 4, 6
    D = 2 if bidirectional else 1
    rng = seeded(f"torch-{nonlinearity}-{bidirectional}")
    module = torch.nn.RNN(I, H, nonlinearity=nonlinearity, bidirectional=bidirectional,
                          dtype=torch.float64)
    with torch.no_grad():
        for param in module.parameters():  # deterministic weights, from our own generator
            param.copy_(torch.from_numpy(0.5 * rng.standard_normal(tuple(param.shape))))
    x = torch.from_numpy(rng.standard_normal((T, N, I))).requires_grad_(True)
    h0 = torch.from_numpy(0.7 * rng.standard_normal((D, N, H))).requires_grad_(True)
    dy = rng.standard_normal((T, N, D * H))
    dS_torch = rng.standard_normal((D, N, H))
    out, h_n = module(x, h0)
    loss = (out * torch.from_numpy(dy)).sum() + (h_n * torch.from_numpy(dS_torch)).sum()
    loss.backward()

    arrays = {"source": x.detach().numpy().copy(), **torch_mapping.rnn_params_from_torch(module),
              "initState": torch_mapping.state_from_torch(h0)}
    desc = rg.SingleGateRNNDescriptor(activation=getattr(rg.RNNActivation, nonlinearity),
                                      bidirectional=bidirectional)
    h = harness.forward(CELL, arrays, desc)["h"]
    np.testing.assert_allclose(h, out.detach().numpy(), rtol=1e-12, atol=1e-12)
    # torch's h_n is rnngraph's final state of each direction (SPEC.md section 4).
    np.testing.assert_allclose(harness.final(h, desc, H), torch_mapping.state_from_torch(h_n),
                               rtol=1e-12, atol=1e-12)
    if nonlinearity == "relu":
        assert np.any(h == 0) and np.any(h > 0)

    grads = harness.gradients(CELL, arrays, desc, dy, torch_mapping.state_from_torch(dS_torch))
    expected = torch_mapping.torch_grads_to_rnngraph("rnn", module)
    expected["source"] = x.grad.numpy()
    expected["initState"] = torch_mapping.state_from_torch(h0.grad)
    assert set(grads) == set(expected)
    for label in expected:
        error = gradcheck.relative_error(grads[label], expected[label])
        assert error < 1e-12, f"d{label} differs from torch by {error:.2e}"


# ---------------------------------------------------------------------------------------
# float32 against float64
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["fwd", "reverse", "bi"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_float32_close_to_float64(activation, direction):
    """The same inputs (exactly representable in float32) in both dtypes.

    Tolerances, in gradcheck.relative_error terms (max abs error / max(1, max |value|)):
    float32's unit roundoff is 6e-8; T = 10 steps of a contracting recurrence (R scaled to
    spectral radius < 1) with H = 16-term dot products accumulate a few hundred roundoffs at
    most, so 1e-5 for the forward pass. Gradients sum over T·N terms more (dR, dW, dbias) and
    go back through all steps, hence 1e-4. Measured here: at most 1.7e-7 forward and 2.9e-7
    for gradients, so both bounds leave a wide margin for other BLAS kernels."""
    T, N, I, H = 10, 4, 8, 16
    case_id = f"{activation}-{direction}-mask-W-bias-h0"
    case = parse(case_id) | {"T": T, "N": N, "I": I, "H": H}
    D = 2 if case["bidirectional"] else 1
    rng = seeded("f32-" + case_id)
    desc = descriptor_for(case)
    for attempt in range(100):
        rng = seeded(f"f32-{case_id}#{attempt}")
        x64 = {"source": rng.standard_normal((T, N, I)),
               "recurrentWeight": 0.5 / np.sqrt(H) * rng.standard_normal((D, H, H)),
               "inputWeight": rng.standard_normal((D * H, I)) / np.sqrt(I),
               "bias": 0.3 * rng.standard_normal(D * H),
               "initState": 0.5 * rng.standard_normal((N, D * H)),
               "mask": (rng.random((T, N, D * H)) > 0.2).astype(float)}
        if D == 1:
            x64["recurrentWeight"] = x64["recurrentWeight"][0]
        x64 = {k: v.astype(np.float32).astype(np.float64) for k, v in x64.items()}
        # A pre-activation within float32 noise of a relu/hardSigmoid kink would flip a
        # derivative between the two dtypes: such a draw is replaced by the next seed.
        z = harness.reference_forward(CELL, x64, desc)["zState"]
        if kink_distance(activation, z) > 1e-4:
            break
    else:
        raise AssertionError("no draw kept pre-activations away from kinks")
    x32 = {k: v.astype(np.float32) for k, v in x64.items()}
    dy = rng.standard_normal((T, N, D * H)).astype(np.float32)
    dS = rng.standard_normal((N, D * H)).astype(np.float32)

    train = descriptor_for(case, training=True)
    out64, out32 = harness.forward(CELL, x64, train), harness.forward(CELL, x32, train)
    for name in ("h", "zState"):
        assert out32[name].dtype == np.float32
        error = gradcheck.relative_error(out32[name], out64[name])
        assert error < 1e-5, f"{name}: float32 off by {error:.2e}"

    grads64 = harness.gradients(CELL, x64, desc, dy.astype(np.float64), dS.astype(np.float64))
    grads32 = harness.gradients(CELL, x32, desc, dy, dS)
    assert list(grads32) == list(grads64)
    for label in grads64:
        assert grads32[label].dtype == np.float32, label
        error = gradcheck.relative_error(grads32[label], grads64[label])
        assert error < 1e-4, f"d{label}: float32 off by {error:.2e}"


# ---------------------------------------------------------------------------------------
# Medium shapes: one random direction
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("case_id", [
    "tanh-bi-mask-W-bias-h0-dS",
    "relu-reverse-mask1ND-W-bias-h0-dS",
    "sigmoid-fwd-nomask-noW-bias-h0x3d-dS",
    "hardSigmoid-fwd-maskN1-W-nobias-h0-nodS",
    "none-reverse-nomask-W-bias-h0-dS",
])
def test_random_direction_medium_shape(case_id):
    """T=20, N=8, I=16, H=24: the directional derivative along one random direction."""
    case = parse(case_id) | {"T": 20, "N": 8, "I": 16, "H": 24}
    T, N, H = case["T"], case["N"], case["H"]
    DH = (2 if case["bidirectional"] else 1) * H
    desc = descriptor_for(case)
    for attempt in range(100):
        rng = seeded(f"medium-{case_id}#{attempt}")
        x = draw_inputs(case, rng, scale=2.0 if case["activation"] == "hardSigmoid" else 0.6)
        x["recurrentWeight"] *= 0.8 / np.sqrt(H)  # contracting: stable over 20 steps
        if "inputWeight" in x:
            x["inputWeight"] /= np.sqrt(case["I"])
        z = harness.reference_forward(CELL, x, desc)["zState"]
        if kink_distance(case["activation"], z) > 1e-4:  # eps·|direction| stays below this
            break
    else:
        raise AssertionError("no draw kept pre-activations away from kinks")
    dy = rng.standard_normal((T, N, DH))
    dS = rng.standard_normal((N, DH)) if case["stateGradient"] else None
    analytic = harness.gradients(CELL, x, desc, dy, dS)
    loss = harness.loss_function(CELL, desc, H, dy, dS)
    differentiable = {k: v for k, v in x.items() if k != "mask"}
    gradcheck.random_direction_check(lambda a: loss({**x, **a}), analytic, differentiable, rng,
                                     where=f"{case_id} T=20 N=8 I=16 H=24")


# ---------------------------------------------------------------------------------------
# Bidirectional = a forward and a reverse unidirectional op side by side
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
def test_bidirectional_is_two_independent_directions(threads):
    """SPEC.md section 1 layouts: the forward half of every bidirectional tensor is a plain
    forward op on the forward blocks, the other half a reverse op on the reverse blocks.
    At a medium shape, with 1 and 2 BLAS threads (the directions may run concurrently)."""
    T, N, I, H = 12, 16, 24, 32
    rng = seeded(f"bi-composition-{threads}")
    x = {"source": rng.standard_normal((T, N, I)),
         "recurrentWeight": 0.8 / np.sqrt(H) * rng.standard_normal((2, H, H)),
         "inputWeight": rng.standard_normal((2 * H, I)) / np.sqrt(I),
         "bias": 0.3 * rng.standard_normal(2 * H),
         "initState": 0.5 * rng.standard_normal((N, 2 * H)),
         "mask": (rng.random((T, N, 2 * H)) > 0.2).astype(float)}
    dy = rng.standard_normal((T, N, 2 * H))
    dS = rng.standard_normal((N, 2 * H))
    halves = {"fwd": (0, slice(0, H), False), "rev": (1, slice(H, 2 * H), True)}
    tanh = rg.RNNActivation.tanh
    original = rg.get_num_threads()
    rg.set_num_threads(threads)
    try:
        bi_desc = rg.SingleGateRNNDescriptor(activation=tanh, bidirectional=True)
        bi_train = rg.SingleGateRNNDescriptor(activation=tanh, bidirectional=True, training=True)
        bi = harness.forward(CELL, x, bi_train)
        bi_grads = harness.gradients(CELL, x, bi_desc, dy, dS)
        dsource = np.zeros_like(x["source"])
        for d, cols, reverse in halves.values():
            uni = {"source": x["source"], "recurrentWeight": x["recurrentWeight"][d],
                   "inputWeight": x["inputWeight"][cols], "bias": x["bias"][cols],
                   "initState": x["initState"][:, cols], "mask": x["mask"][..., cols]}
            desc = rg.SingleGateRNNDescriptor(activation=tanh, reverse=reverse)
            train = rg.SingleGateRNNDescriptor(activation=tanh, reverse=reverse, training=True)
            out = harness.forward(CELL, uni, train)
            for name in ("h", "zState"):
                np.testing.assert_allclose(bi[name][..., cols], out[name], rtol=1e-12,
                                           atol=1e-12, err_msg=name)
            grads = harness.gradients(CELL, uni, desc, dy[..., cols], dS[:, cols])
            np.testing.assert_allclose(bi_grads["recurrentWeight"][d], grads["recurrentWeight"],
                                       rtol=1e-11, atol=1e-11)
            for label in ("inputWeight", "bias"):
                np.testing.assert_allclose(bi_grads[label][cols], grads[label], rtol=1e-11,
                                           atol=1e-11, err_msg=label)
            np.testing.assert_allclose(bi_grads["initState"][:, cols], grads["initState"],
                                       rtol=1e-11, atol=1e-11)
            dsource += grads["source"]
        np.testing.assert_allclose(bi_grads["source"], dsource, rtol=1e-11, atol=1e-11)
    finally:
        rg.set_num_threads(original)
