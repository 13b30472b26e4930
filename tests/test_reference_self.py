"""Self-tests of the NumPy test oracle in ``tests/reference``.

The oracle is checked against PyTorch (torch.nn.RNN, LSTM and GRU, uni- and
bidirectional, float64) and against small hand-computed cases that pin the
SPEC.md choices PyTorch cannot check (time order of ``reverse``, masks,
peepholes, ``flipZ``, gate orders, ``hardSigmoid``).
"""

import numpy as np
import pytest
import torch

try:
    from tests.reference import (
        activation,
        gru,
        gru_params_from_torch,
        lstm,
        lstm_params_from_torch,
        rnn_params_from_torch,
        single_gate_rnn,
        state_from_torch,
        torch_grads_to_rnngraph,
    )
except ImportError:  # plain ``pytest`` run with only tests/ on sys.path
    from reference import (
        activation,
        gru,
        gru_params_from_torch,
        lstm,
        lstm_params_from_torch,
        rnn_params_from_torch,
        single_gate_rnn,
        state_from_torch,
        torch_grads_to_rnngraph,
    )

T, N, I, H = 5, 3, 4, 6
TOL = 1e-10

NUM_GATES = {"rnn": 1, "lstm": 4, "gru": 3}
REFERENCE = {"rnn": single_gate_rnn, "lstm": lstm, "gru": gru}

#: Cell configurations used by the structural tests.
CONFIGS = [
    ("rnn", {}),
    ("rnn", {"activation": "tanh"}),
    ("lstm", {}),
    ("lstm", {"forgetGateLast": True, "activation": "hardSigmoid"}),
    ("gru", {}),
    ("gru", {"resetAfter": True}),
    ("gru", {"resetAfter": True, "resetGateFirst": True, "flipZ": True}),
]
CONFIG_IDS = ["rnn-relu", "rnn-tanh", "lstm", "lstm-forgetlast", "gru",
              "gru-resetafter", "gru-all-flags"]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def assert_close(actual, expected, tol=TOL):
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


# ---------------------------------------------------------------------------
# Random arguments in the rnngraph layout (SPEC section 1)
# ---------------------------------------------------------------------------

def random_args(rng, cell, *, bidirectional=False, projected=False,
                with_mask=True):
    """Random keyword arguments for ``REFERENCE[cell]`` in SPEC layout."""
    dirs = 2 if bidirectional else 1
    gate_width = NUM_GATES[cell] * H
    r_shape = (dirs, gate_width, H) if bidirectional else (gate_width, H)
    args = {
        "recurrentWeight": 0.5 * rng.standard_normal(r_shape),
        "bias": rng.standard_normal(dirs * gate_width),
        "initState": rng.standard_normal((N, dirs * H)),
    }
    if projected:
        args["source"] = rng.standard_normal((T, N, dirs * gate_width))
    else:
        args["source"] = rng.standard_normal((T, N, I))
        args["inputWeight"] = 0.5 * rng.standard_normal((dirs * gate_width, I))
    if with_mask:
        args["mask"] = (rng.random((T, N, dirs * H)) > 0.3).astype(np.float64)
    if cell == "lstm":
        args["initCell"] = rng.standard_normal((N, dirs * H))
        p_shape = (2, 4 * H) if bidirectional else (4 * H,)
        args["peephole"] = 0.5 * rng.standard_normal(p_shape)
    if cell == "gru":
        args["secondaryBias"] = rng.standard_normal(dirs * H)
    return args


def direction_args(args, cell, d):
    """The unidirectional arguments of direction ``d`` of bidirectional
    ``args`` (SPEC section 1: forward block / columns first)."""
    gw = NUM_GATES[cell] * H
    rows = slice(d * gw, (d + 1) * gw)
    cols = slice(d * H, (d + 1) * H)
    out = {
        "recurrentWeight": args["recurrentWeight"][d],
        "bias": args["bias"][rows],
        "initState": args["initState"][:, cols],
    }
    if "inputWeight" in args:
        out["source"] = args["source"]
        out["inputWeight"] = args["inputWeight"][rows]
    else:
        out["source"] = args["source"][..., rows]
    if "mask" in args:
        out["mask"] = args["mask"][..., cols]
    if cell == "lstm":
        out["initCell"] = args["initCell"][:, cols]
        out["peephole"] = args["peephole"][d]
    if cell == "gru":
        out["secondaryBias"] = args["secondaryBias"][cols]
    return out


def final_states(sequence, bidirectional):
    """Final state of each direction as torch's ``[D, N, H]`` (SPEC 4)."""
    finals = [sequence[-1, :, :H]]
    if bidirectional:
        finals.append(sequence[0, :, H:])
    return np.stack(finals)


# ---------------------------------------------------------------------------
# Agreement with PyTorch
# ---------------------------------------------------------------------------

def torch_setup(module_cls, seed, bidirectional, **kwargs):
    """A float64 torch module plus random x and initial states."""
    torch.manual_seed(seed)
    module = module_cls(I, H, bidirectional=bidirectional,
                        dtype=torch.float64, **kwargs)
    rng = np.random.default_rng(seed)
    dirs = 2 if bidirectional else 1
    x = torch.from_numpy(rng.standard_normal((T, N, I)))
    h0 = torch.from_numpy(rng.standard_normal((dirs, N, H)))
    c0 = torch.from_numpy(rng.standard_normal((dirs, N, H)))
    return module, x, h0, c0


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_single_gate_matches_torch_rnn(nonlinearity, bidirectional):
    module, x, h0, _ = torch_setup(torch.nn.RNN, 1, bidirectional,
                                   nonlinearity=nonlinearity)
    with torch.no_grad():
        out, h_n = module(x, h0)
    ref = single_gate_rnn(x.numpy(), **rnn_params_from_torch(module),
                          initState=state_from_torch(h0),
                          bidirectional=bidirectional,
                          activation=nonlinearity)
    assert ref["h"].shape == (T, N, (2 if bidirectional else 1) * H)
    assert_close(ref["h"], out.numpy())
    assert_close(final_states(ref["h"], bidirectional), h_n.numpy())


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_matches_torch(bidirectional):
    module, x, h0, c0 = torch_setup(torch.nn.LSTM, 2, bidirectional)
    with torch.no_grad():
        out, (h_n, c_n) = module(x, (h0, c0))
    ref = lstm(x.numpy(), **lstm_params_from_torch(module),
               initState=state_from_torch(h0), initCell=state_from_torch(c0),
               bidirectional=bidirectional)
    dirs = 2 if bidirectional else 1
    assert ref["c"].shape == (T, N, dirs * H)
    assert ref["zState"].shape == (T, N, dirs * 4 * H)
    assert_close(ref["h"], out.numpy())
    assert_close(final_states(ref["h"], bidirectional), h_n.numpy())
    assert_close(final_states(ref["c"], bidirectional), c_n.numpy())


@pytest.mark.parametrize("bidirectional", [False, True])
def test_gru_matches_torch(bidirectional):
    module, x, h0, _ = torch_setup(torch.nn.GRU, 3, bidirectional)
    with torch.no_grad():
        out, h_n = module(x, h0)
    ref = gru(x.numpy(), **gru_params_from_torch(module),
              initState=state_from_torch(h0), bidirectional=bidirectional,
              resetGateFirst=True, resetAfter=True, flipZ=False)
    assert ref["zState"].shape == (T, N, (2 if bidirectional else 1) * 3 * H)
    assert_close(ref["h"], out.numpy())
    assert_close(final_states(ref["h"], bidirectional), h_n.numpy())


def numerical_gradient(loss, array, eps=1e-6):
    """Central differences of ``loss()`` w.r.t. every entry of ``array``."""
    grad = np.zeros_like(array)
    for index in np.ndindex(array.shape):
        saved = array[index]
        array[index] = saved + eps
        up = loss()
        array[index] = saved - eps
        down = loss()
        array[index] = saved
        grad[index] = (up - down) / (2 * eps)
    return grad


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_torch_grads_mapping_matches_finite_differences(cell, bidirectional):
    """``torch_grads_to_rnngraph`` gives d(loss)/d(rnngraph parameter)."""
    module_cls = {"rnn": torch.nn.RNN, "lstm": torch.nn.LSTM,
                  "gru": torch.nn.GRU}[cell]
    module, x, h0, c0 = torch_setup(module_cls, 4, bidirectional)
    dirs = 2 if bidirectional else 1
    upstream = np.random.default_rng(5).standard_normal((T, N, dirs * H))
    state = (h0, c0) if cell == "lstm" else h0
    out = module(x, state)[0]
    (out * torch.from_numpy(upstream)).sum().backward()
    grads = torch_grads_to_rnngraph(cell, module)

    params = {"rnn": rnn_params_from_torch, "lstm": lstm_params_from_torch,
              "gru": gru_params_from_torch}[cell](module)
    options = {"initState": state_from_torch(h0),
               "bidirectional": bidirectional}
    if cell == "rnn":
        options["activation"] = "tanh"
    if cell == "lstm":
        options["initCell"] = state_from_torch(c0)
    if cell == "gru":
        options.update(resetGateFirst=True, resetAfter=True)

    def loss():
        h = REFERENCE[cell](x.numpy(), **params, **options)["h"]
        return np.sum(h * upstream)

    assert set(grads) == set(params)
    for name, value in params.items():
        assert grads[name].shape == value.shape, name
        assert_close(grads[name], numerical_gradient(loss, value), tol=1e-7)


# ---------------------------------------------------------------------------
# Hand-checkable cases (SPEC sections 2-5)
# ---------------------------------------------------------------------------

def test_activation_values():
    x = np.array([-3.0, -2.5, -1.0, 0.0, 1.0, 2.5, 3.0])
    assert_close(activation("hardSigmoid", x),
                 [0.0, 0.0, 0.3, 0.5, 0.7, 1.0, 1.0])
    assert_close(activation("none", x), x)
    assert_close(activation("relu", x), [0, 0, 0, 0, 1, 2.5, 3])
    assert_close(activation("tanh", x), np.tanh(x))
    assert_close(activation("sigmoid", x), sigmoid(x))
    # Raw values 0..4 follow the same order (SPEC section 2).
    assert_close(activation(4, x), activation("hardSigmoid", x))
    assert_close(activation(1, x), activation("relu", x))
    with pytest.raises(ValueError):
        activation("softplus", x)
    with pytest.raises(ValueError):
        activation(5, x)


@pytest.mark.parametrize("act", ["relu", "tanh", "none", "hardSigmoid"])
def test_single_gate_one_step_by_hand(act):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, N, I))
    w = rng.standard_normal((H, I))
    r = rng.standard_normal((H, H))
    b = rng.standard_normal(H)
    h0 = rng.standard_normal((N, H))
    ref = single_gate_rnn(x, r, inputWeight=w, bias=b, initState=h0,
                          activation=act)
    z = x[0] @ w.T + b + h0 @ r.T
    assert_close(ref["zState"][0], z)
    assert_close(ref["h"][0], activation(act, z))


def test_single_gate_two_steps_with_mask_by_hand():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, N, H))  # already projected, no W
    r = rng.standard_normal((H, H))
    b = rng.standard_normal(H)
    h0 = rng.standard_normal((N, H))
    m = np.array([[[1.0]] * N, [[0.0], [1.0], [0.5]]])  # [T=2, N=3, 1]
    ref = single_gate_rnn(x, r, bias=b, initState=h0, mask=m,
                          activation="tanh")
    h_0 = np.tanh(x[0] + b + (h0 * m[0]) @ r.T)
    h_1 = np.tanh(x[1] + b + (h_0 * m[1]) @ r.T)
    assert_close(ref["h"], np.stack([h_0, h_1]))


def test_init_state_with_leading_one_axis():
    rng = np.random.default_rng(12)
    args = random_args(rng, "lstm")
    plain = lstm(**args)
    args["initState"] = args["initState"][None]
    args["initCell"] = args["initCell"][None]
    leading = lstm(**args)
    for key in plain:
        assert_close(leading[key], plain[key])


@pytest.mark.parametrize("cell,options", CONFIGS, ids=CONFIG_IDS)
def test_reverse_is_forward_on_flipped_time(cell, options):
    """SPEC 4: reverse processes T-1..0 and stores x[t]'s state at out[t]."""
    rng = np.random.default_rng(20)
    args = random_args(rng, cell)
    backward = REFERENCE[cell](**args, reverse=True, **options)
    flipped = dict(args, source=args["source"][::-1], mask=args["mask"][::-1])
    forward = REFERENCE[cell](**flipped, **options)
    for key in backward:
        assert_close(backward[key], forward[key][::-1])
    # out[T-1] is the first reverse step: it sees only x[T-1] and initState.
    only_last = REFERENCE[cell](**dict(args, source=args["source"][-1:],
                                       mask=args["mask"][-1:]),
                                reverse=True, **options)
    assert_close(backward["h"][-1], only_last["h"][0])


@pytest.mark.parametrize("cell,options", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("projected", [False, True])
def test_bidirectional_is_two_unidirectional_runs(cell, options, projected):
    """SPEC 1/3: forward block first; ``reverse`` ignored when bidi."""
    rng = np.random.default_rng(21)
    args = random_args(rng, cell, bidirectional=True, projected=projected)
    both = REFERENCE[cell](**args, bidirectional=True, **options)
    reverse_ignored = REFERENCE[cell](**args, bidirectional=True,
                                      reverse=True, **options)
    fwd = REFERENCE[cell](**direction_args(args, cell, 0), **options)
    rev = REFERENCE[cell](**direction_args(args, cell, 1), reverse=True,
                          **options)
    for key in both:
        assert_close(both[key], np.concatenate([fwd[key], rev[key]], -1))
        assert_close(reverse_ignored[key], both[key])


@pytest.mark.parametrize("cell,options", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_projected_source_equals_input_weight(cell, options, bidirectional):
    """SPEC 5: without W, source is x' minus the bias (bias still added)."""
    rng = np.random.default_rng(22)
    args = random_args(rng, cell, bidirectional=bidirectional)
    with_w = REFERENCE[cell](**args, bidirectional=bidirectional, **options)
    projected = dict(args, source=args["source"] @ args["inputWeight"].T)
    del projected["inputWeight"]
    without_w = REFERENCE[cell](**projected, bidirectional=bidirectional,
                                **options)
    for key in with_w:
        assert_close(without_w[key], with_w[key])


@pytest.mark.parametrize("cell,options", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("bidirectional", [False, True])
def test_zero_mask_removes_only_recurrent_term(cell, options, bidirectional):
    """SPEC 5: the mask only enters ``hm·Rᵀ``, so mask 0 == R 0."""
    rng = np.random.default_rng(23)
    args = random_args(rng, cell, bidirectional=bidirectional)
    masked = REFERENCE[cell](**dict(args, mask=np.zeros((T, N, 1))),
                             bidirectional=bidirectional, **options)
    no_recurrence = dict(args, recurrentWeight=0 * args["recurrentWeight"])
    del no_recurrence["mask"]
    zero_r = REFERENCE[cell](**no_recurrence, bidirectional=bidirectional,
                             **options)
    for key in masked:
        assert_close(masked[key], zero_r[key])
    # A mask of ones is the same as no mask.
    ones = REFERENCE[cell](**dict(args, mask=np.ones(())),
                           bidirectional=bidirectional, **options)
    no_mask = dict(args)
    del no_mask["mask"]
    unmasked = REFERENCE[cell](**no_mask, bidirectional=bidirectional,
                               **options)
    for key in ones:
        assert_close(ones[key], unmasked[key])


def test_single_gate_zero_mask_gives_input_only():
    rng = np.random.default_rng(24)
    args = random_args(rng, "rnn")
    args["mask"] = np.zeros((T, N, H))
    ref = single_gate_rnn(**args, activation="tanh")
    xp = args["source"] @ args["inputWeight"].T + args["bias"]
    assert_close(ref["zState"], xp)
    assert_close(ref["h"], np.tanh(xp))


@pytest.mark.parametrize("reset_after", [False, True])
def test_gru_one_step_by_hand(reset_after):
    """SPEC 5 GRU, gate order [z, r, o]; mask only inside ``hm·Rᵀ``."""
    rng = np.random.default_rng(30)
    x = rng.standard_normal((1, N, I))
    w = rng.standard_normal((3 * H, I))
    r_w = rng.standard_normal((3 * H, H))
    b = rng.standard_normal(3 * H)
    b2 = rng.standard_normal(H)
    h0 = rng.standard_normal((N, H))
    m = rng.random((1, N, H))
    ref = gru(x, r_w, inputWeight=w, bias=b, initState=h0, mask=m,
              secondaryBias=b2, resetAfter=reset_after)
    xp = x[0] @ w.T + b
    hm = h0 * m[0]
    z = sigmoid(xp[:, :H] + hm @ r_w[:H].T)
    r = sigmoid(xp[:, H:2 * H] + hm @ r_w[H:2 * H].T)
    if reset_after:
        o = np.tanh(xp[:, 2 * H:] + r * (hm @ r_w[2 * H:].T + b2))
    else:
        o = np.tanh(xp[:, 2 * H:] + (hm * r) @ r_w[2 * H:].T)
    assert_close(ref["zState"][0], np.concatenate([z, r, o], -1))
    assert_close(ref["h"][0], z * h0 + (1 - z) * o)


def test_gru_secondary_bias_unused_without_reset_after():
    rng = np.random.default_rng(31)
    args = random_args(rng, "gru")
    with_b2 = gru(**args)
    del args["secondaryBias"]
    without_b2 = gru(**args)
    for key in with_b2:
        assert_close(with_b2[key], without_b2[key])


@pytest.mark.parametrize("reset_after", [False, True])
def test_gru_flip_z_is_complementary_blend(reset_after):
    """flipZ=True with the z gate negated (sigmoid(-a) = 1 - sigmoid(a))
    equals flipZ=False: h = z*hp + (1-z)*o vs (1-z)*hp + z*o."""
    rng = np.random.default_rng(32)
    args = random_args(rng, "gru")
    plain = gru(**args, resetAfter=reset_after)
    negated = dict(args)
    for name in ("inputWeight", "recurrentWeight", "bias"):
        value = np.array(args[name])
        value[:H] *= -1  # rows of z in [z, r, o]
        negated[name] = value
    flipped = gru(**negated, resetAfter=reset_after, flipZ=True)
    assert_close(flipped["h"], plain["h"])
    assert_close(flipped["zState"][..., :H], 1 - plain["zState"][..., :H])
    assert_close(flipped["zState"][..., H:], plain["zState"][..., H:])

    # One step by hand from zState: h = (1 - z) * h0 + z * o.
    one = gru(**dict(args, source=args["source"][:1], mask=None),
              resetAfter=reset_after, flipZ=True)
    z, o = one["zState"][0, :, :H], one["zState"][0, :, 2 * H:]
    h0 = args["initState"]
    assert_close(one["h"][0], (1 - z) * h0 + z * o)


def permute_gate_rows(array, order, hidden, axis=0):
    """Reorder the ``G*H`` axis blocks of ``array`` by ``order``."""
    blocks = np.split(np.asarray(array), len(order), axis=axis)
    assert blocks[0].shape[axis] == hidden
    return np.concatenate([blocks[k] for k in order], axis=axis)


def test_gru_reset_gate_first_is_a_gate_permutation():
    rng = np.random.default_rng(33)
    args = random_args(rng, "gru", projected=True)
    plain = gru(**args, resetAfter=True)
    swap = [1, 0, 2]  # [z, r, o] -> [r, z, o]
    permuted = dict(args,
                    source=permute_gate_rows(args["source"], swap, H, -1),
                    recurrentWeight=permute_gate_rows(args["recurrentWeight"],
                                                      swap, H),
                    bias=permute_gate_rows(args["bias"], swap, H))
    first = gru(**permuted, resetAfter=True, resetGateFirst=True)
    assert_close(first["h"], plain["h"])
    assert_close(first["zState"], permute_gate_rows(plain["zState"], swap, H,
                                                    -1))


def test_lstm_forget_gate_last_is_a_gate_permutation():
    """SPEC 3 (pinned): forgetGateLast means [i, z, f, o]."""
    rng = np.random.default_rng(40)
    args = random_args(rng, "lstm")
    plain = lstm(**args)
    swap = [0, 2, 1, 3]  # [i, f, z, o] -> [i, z, f, o]
    permuted = dict(args,
                    inputWeight=permute_gate_rows(args["inputWeight"], swap,
                                                  H),
                    recurrentWeight=permute_gate_rows(args["recurrentWeight"],
                                                      swap, H),
                    bias=permute_gate_rows(args["bias"], swap, H),
                    peephole=permute_gate_rows(args["peephole"], swap, H))
    last = lstm(**permuted, forgetGateLast=True)
    assert_close(last["h"], plain["h"])
    assert_close(last["c"], plain["c"])
    assert_close(last["zState"], permute_gate_rows(plain["zState"], swap, H,
                                                   -1))


def test_lstm_one_step_with_peephole_by_hand():
    """SPEC 5 LSTM: peephole on all four gates with the unmasked cp."""
    rng = np.random.default_rng(41)
    x = rng.standard_normal((1, N, I))
    w = rng.standard_normal((4 * H, I))
    r_w = rng.standard_normal((4 * H, H))
    b = rng.standard_normal(4 * H)
    p = rng.standard_normal(4 * H)
    h0 = rng.standard_normal((N, H))
    c0 = rng.standard_normal((N, H))
    m = rng.random((1, N, H))
    ref = lstm(x, r_w, inputWeight=w, bias=b, initState=h0, initCell=c0,
               mask=m, peephole=p)
    pre = x[0] @ w.T + b + (h0 * m[0]) @ r_w.T + np.tile(c0, 4) * p
    i, f, z, o = np.split(pre, 4, axis=-1)
    i, f, z, o = sigmoid(i), sigmoid(f), np.tanh(z), sigmoid(o)
    c = f * c0 + i * z
    assert_close(ref["zState"][0], np.concatenate([i, f, z, o], -1))
    assert_close(ref["c"][0], c)
    assert_close(ref["h"][0], o * np.tanh(c))


def test_lstm_bidirectional_peephole_layouts_agree():
    """SPEC 1: bidirectional peephole is [2, 4H] or, equivalently, [8H]."""
    rng = np.random.default_rng(42)
    args = random_args(rng, "lstm", bidirectional=True)
    stacked = lstm(**args, bidirectional=True)
    flat = lstm(**dict(args, peephole=args["peephole"].reshape(-1)),
                bidirectional=True)
    for key in stacked:
        assert_close(flat[key], stacked[key])


def test_lstm_custom_activations_one_step():
    """Each gate uses its own activation; h uses ``activation``."""
    rng = np.random.default_rng(43)
    x = rng.standard_normal((1, N, 4 * H))  # projected
    r_w = rng.standard_normal((4 * H, H))
    h0 = rng.standard_normal((N, H))
    c0 = rng.standard_normal((N, H))
    acts = {"inputGateActivation": "hardSigmoid",
            "forgetGateActivation": "none",
            "cellGateActivation": "relu",
            "outputGateActivation": "tanh",
            "activation": "sigmoid"}
    ref = lstm(x, r_w, initState=h0, initCell=c0, **acts)
    pre = x[0] + h0 @ r_w.T
    i, f, z, o = np.split(pre, 4, axis=-1)
    i = np.clip(0.2 * i + 0.5, 0, 1)
    z = np.maximum(z, 0)
    o = np.tanh(o)
    c = f * c0 + i * z
    assert_close(ref["c"][0], c)
    assert_close(ref["h"][0], o * sigmoid(c))
