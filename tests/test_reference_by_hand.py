"""Hand-computed checks of the NumPy test oracle (tests/reference/numpy_rnn.py) that pin the
SPEC.md choices PyTorch cannot check: hardSigmoid, peepholes, flipZ, gate orders, the GRU's
secondaryBias, state layouts. (The single gate's hand-computed steps check rnngraph and the
reference together in test_single_gate_rnn_forward.py.)
"""

import numpy as np
import pytest

from reference import activation, gru, lstm
from toolkit import Case, assert_all_close, assert_close, make_inputs, reference

SIZES = {"T": 5, "N": 3, "I": 4, "H": 6}
H = SIZES["H"]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_activation_values():
    x = np.array([-3.0, -2.5, -1.0, 0.0, 1.0, 2.5, 3.0])
    assert_close(activation("hardSigmoid", x), [0.0, 0.0, 0.3, 0.5, 0.7, 1.0, 1.0], "hand")
    assert_close(activation("none", x), x, "identical")
    assert_close(activation("relu", x), [0, 0, 0, 0, 1, 2.5, 3], "identical")
    assert_close(activation("tanh", x), np.tanh(x), "identical")
    assert_close(activation("sigmoid", x), sigmoid(x), "identical")
    # Raw values 0..4 follow the same order (SPEC section 2).
    assert_close(activation(4, x), activation("hardSigmoid", x), "identical")
    assert_close(activation(1, x), activation("relu", x), "identical")
    with pytest.raises(ValueError):
        activation("softplus", x)
    with pytest.raises(ValueError):
        activation(5, x)


def test_init_state_with_leading_one_axis(rng):
    case = Case("LSTM", initState="[1,N,DH]", initCell="[1,N,DH]", **SIZES)
    x = make_inputs(case, rng)
    flat = dict(x, initState=x["initState"][0], initCell=x["initCell"][0])
    assert_all_close(reference(case, x), reference(case, flat), "identical")


@pytest.mark.parametrize("reset_after", [False, True])
def test_gru_one_step_by_hand(reset_after, rng):
    """SPEC 5 GRU, gate order [z, r, o]; mask only inside ``hm·Rᵀ``."""
    case = Case("GRU", resetAfter=reset_after).with_all_inputs(fractional_mask=True,
                                                               **(SIZES | {"T": 1}))
    x = make_inputs(case, rng, scale=1.0)
    w, r_w, b2, h0 = x["inputWeight"], x["recurrentWeight"], x["secondaryBias"], x["initState"]
    xp = x["source"][0] @ w.T + x["bias"]
    hm = h0 * x["mask"][0]
    z = sigmoid(xp[:, :H] + hm @ r_w[:H].T)
    r = sigmoid(xp[:, H:2 * H] + hm @ r_w[H:2 * H].T)
    if reset_after:
        o = np.tanh(xp[:, 2 * H:] + r * (hm @ r_w[2 * H:].T + b2))
    else:
        o = np.tanh(xp[:, 2 * H:] + (hm * r) @ r_w[2 * H:].T)
    ref = gru(**x, resetAfter=reset_after)
    assert_close(ref["zState"][0], np.concatenate([z, r, o], -1), "float64")
    assert_close(ref["h"][0], z * h0 + (1 - z) * o, "float64")


def test_gru_secondary_bias_unused_without_reset_after(rng):
    x = make_inputs(Case("GRU").with_all_inputs(**SIZES), rng)
    without_b2 = {k: v for k, v in x.items() if k != "secondaryBias"}
    assert_all_close(gru(**x), gru(**without_b2), "identical")


@pytest.mark.parametrize("reset_after", [False, True])
def test_gru_flip_z_is_complementary_blend(reset_after, rng):
    """flipZ=True with the z gate negated (sigmoid(-a) = 1 - sigmoid(a)) equals flipZ=False:
    h = z*hp + (1-z)*o vs (1-z)*hp + z*o."""
    x = make_inputs(Case("GRU").with_all_inputs(**SIZES), rng)
    plain = gru(**x, resetAfter=reset_after)
    negated = dict(x)
    for name in ("inputWeight", "recurrentWeight", "bias"):
        value = np.array(x[name])
        value[:H] *= -1  # rows of z in [z, r, o]
        negated[name] = value
    flipped = gru(**negated, resetAfter=reset_after, flipZ=True)
    assert_close(flipped["h"], plain["h"], "float64")
    assert_close(flipped["zState"][..., :H], 1 - plain["zState"][..., :H], "float64")
    assert_close(flipped["zState"][..., H:], plain["zState"][..., H:], "float64")
    # One step by hand from zState: h = (1 - z) * h0 + z * o.
    one = gru(**dict(x, source=x["source"][:1], mask=None), resetAfter=reset_after, flipZ=True)
    z, o = one["zState"][0, :, :H], one["zState"][0, :, 2 * H:]
    assert_close(one["h"][0], (1 - z) * x["initState"] + z * o, "float64")


def permute_gates(array, order, axis=0):
    """Reorder the ``G*H`` axis blocks of ``array`` by ``order``."""
    blocks = np.split(np.asarray(array), len(order), axis=axis)
    assert blocks[0].shape[axis] == H
    return np.concatenate([blocks[k] for k in order], axis=axis)


def test_gru_reset_gate_first_is_a_gate_permutation(rng):
    x = make_inputs(Case("GRU").with_all_inputs(inputWeight=False, **SIZES), rng)
    plain = gru(**x, resetAfter=True)
    swap = [1, 0, 2]  # [z, r, o] -> [r, z, o]
    permuted = dict(x, source=permute_gates(x["source"], swap, -1),
                    recurrentWeight=permute_gates(x["recurrentWeight"], swap),
                    bias=permute_gates(x["bias"], swap))
    first = gru(**permuted, resetAfter=True, resetGateFirst=True)
    assert_close(first["h"], plain["h"], "float64")
    assert_close(first["zState"], permute_gates(plain["zState"], swap, -1), "float64")


def test_lstm_forget_gate_last_is_a_gate_permutation(rng):
    """SPEC 3 (pinned): forgetGateLast means [i, z, f, o]."""
    x = make_inputs(Case("LSTM").with_all_inputs(**SIZES), rng)
    plain = lstm(**x)
    swap = [0, 2, 1, 3]  # [i, f, z, o] -> [i, z, f, o]
    permuted = dict(x, **{k: permute_gates(x[k], swap)
                          for k in ("inputWeight", "recurrentWeight", "bias", "peephole")})
    last = lstm(**permuted, forgetGateLast=True)
    assert_close(last["h"], plain["h"], "float64")
    assert_close(last["c"], plain["c"], "float64")
    assert_close(last["zState"], permute_gates(plain["zState"], swap, -1), "float64")


def test_lstm_one_step_with_peephole_by_hand(rng):
    """SPEC 5 LSTM: peephole on all four gates with the unmasked cp."""
    case = Case("LSTM").with_all_inputs(fractional_mask=True, **(SIZES | {"T": 1}))
    x = make_inputs(case, rng, scale=1.0)
    c0, p = x["initCell"], x["peephole"]
    pre = (x["source"][0] @ x["inputWeight"].T + x["bias"]
           + (x["initState"] * x["mask"][0]) @ x["recurrentWeight"].T + np.tile(c0, 4) * p)
    i, f, z, o = np.split(pre, 4, axis=-1)
    i, f, z, o = sigmoid(i), sigmoid(f), np.tanh(z), sigmoid(o)
    c = f * c0 + i * z
    ref = lstm(**x)
    assert_close(ref["zState"][0], np.concatenate([i, f, z, o], -1), "float64")
    assert_close(ref["c"][0], c, "float64")
    assert_close(ref["h"][0], o * np.tanh(c), "float64")


def test_lstm_bidirectional_peephole_layouts_agree(rng):
    """SPEC 1: bidirectional peephole is [2, 4H] or, equivalently, [8H]."""
    x = make_inputs(Case("LSTM").with_all_inputs(direction="bi", **SIZES), rng)
    stacked = lstm(**x, bidirectional=True)
    flat = lstm(**dict(x, peephole=x["peephole"].reshape(-1)), bidirectional=True)
    assert_all_close(flat, stacked, "identical")


def test_lstm_custom_activations_one_step(rng):
    """Each gate uses its own activation; h uses ``activation``."""
    acts = {"inputGateActivation": "hardSigmoid", "forgetGateActivation": "none",
            "cellGateActivation": "relu", "outputGateActivation": "tanh",
            "activation": "sigmoid"}
    case = Case("LSTM", activations=acts, inputWeight=False, bias=False, initState="[N,DH]",
                initCell="[N,DH]", **(SIZES | {"T": 1}))
    x = make_inputs(case, rng, scale=1.0)
    pre = x["source"][0] + x["initState"] @ x["recurrentWeight"].T
    i, f, z, o = np.split(pre, 4, axis=-1)
    c = f * x["initCell"] + np.clip(0.2 * i + 0.5, 0, 1) * np.maximum(z, 0)
    ref = lstm(**x, **acts)
    assert_close(ref["c"][0], c, "float64")
    assert_close(ref["h"][0], np.tanh(o) * sigmoid(c), "float64")
