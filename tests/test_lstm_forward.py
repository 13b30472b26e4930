"""LSTM forward op against the NumPy reference (SPEC.md sections 1-5), plus checks that do not
depend on the reference: gate-order permutation, absent inputs as zeros/ones, layout
equivalences, a hand-written single step, and float32 against float64."""

import numpy as np
import pytest

import harness
import lstm_helpers as lh
import rnngraph as rg

EXACT = dict(rtol=1e-12, atol=1e-12)  # float64, same operations, only summation order differs


@pytest.fixture
def rng(request):
    # conftest's rng seeds from hash(nodeid), which is salted per process: use CRC-32.
    return lh.stable_rng(request.node.nodeid)


def case(id, desc=None, **inputs):
    return pytest.param(desc or {}, inputs, id=id)


ACTIVATION_CASES = [
    case(f"{slot}={act}", {slot: getattr(rg.RNNActivation, act)}, peephole="[D4H]")
    for slot in lh.SLOTS for act in lh.ACTIVATIONS
]

FLAG_CASES = [
    case("defaults"),
    case("forgetGateLast", {"forgetGateLast": True}),
    case("forgetGateLast-peephole-bidirectional",
         {"forgetGateLast": True, "bidirectional": True}, peephole="[2,4H]"),
    case("peephole[4H]", peephole="[D4H]"),
    case("bidirectional-peephole[2,4H]", {"bidirectional": True}, peephole="[2,4H]"),
    case("bidirectional-peephole[8H]", {"bidirectional": True}, peephole="[D4H]"),
    case("mask[T,N,H]", mask="[T,N,DH]"),
    case("mask[T,N,1]", mask="[T,N,1]"),
    case("mask[T,1,H]", mask="[T,1,DH]"),
    case("mask[N,H]", mask="[N,DH]"),
    case("mask-fractional", mask="fractional[T,N,DH]"),
    case("reverse", {"reverse": True}),
    case("reverse-mask-peephole", {"reverse": True}, mask="[T,N,DH]", peephole="[D4H]"),
    case("bidirectional", {"bidirectional": True}),
    case("bidirectional-mask[T,N,2H]", {"bidirectional": True}, mask="[T,N,DH]"),
    case("bidirectional-mask[T,1,1]", {"bidirectional": True}, mask="[T,1,1]"),
    case("initState-initCell[1,N,H]", initState="[1,N,DH]", initCell="[1,N,DH]"),
    case("bidirectional-initState-initCell[1,N,2H]", {"bidirectional": True},
         initState="[1,N,DH]", initCell="[1,N,DH]"),
    case("no-initState", initState=None),
    case("no-initCell", initCell=None),
    case("no-initState-no-initCell", initState=None, initCell=None),
    case("no-W", inputWeight=False),
    case("bidirectional-no-W", {"bidirectional": True}, inputWeight=False, peephole="[D4H]"),
    case("no-bias", bias=False),
    case("no-W-no-bias-reverse", {"reverse": True}, inputWeight=False, bias=False),
    case("T=1", T=1, peephole="[D4H]"),
    case("bidirectional-T=1", {"bidirectional": True}, T=1),
    case("N=1", N=1, mask="[T,N,DH]"),
    case("I=5-H=3", I=5, H=3, peephole="[D4H]"),
    case("I=2-H=4-bidirectional", {"bidirectional": True}, I=2, H=4),
    case("all-options-bidirectional-forgetGateLast-hardSigmoid",
         {"bidirectional": True, "forgetGateLast": True, "reverse": True,
          "inputGateActivation": rg.RNNActivation.hardSigmoid,
          "activation": rg.RNNActivation.sigmoid},
         peephole="[2,4H]", mask="[T,N,1]", initState="[1,N,DH]"),
]


@pytest.mark.parametrize("desc_flags, inputs", ACTIVATION_CASES + FLAG_CASES)
def test_forward_matches_reference(desc_flags, inputs, rng):
    desc = rg.LSTMDescriptor(training=True, **desc_flags)
    x = lh.draw_inputs(rng, desc, **inputs)  # relu, if any, sees both signs
    got = lh.run_forward(x, desc)
    want = harness.reference_forward("LSTM", x, desc)
    for name in ("h", "c", "zState"):
        np.testing.assert_allclose(got[name], want[name], **EXACT,
                                   err_msg=f"{name}: max abs diff "
                                           f"{lh.max_abs_diff(got[name], want[name]):.3e}")


@pytest.mark.parametrize("slot", lh.SLOTS)
def test_hard_sigmoid_saturates_like_the_reference(slot, rng):
    # Larger inputs: some hardSigmoid inputs lie beyond ±2.5, where it is exactly 0 or 1.
    desc = rg.LSTMDescriptor(training=True, **{slot: rg.RNNActivation.hardSigmoid})

    def saturated_both_ways(pre):
        return np.any(pre["hardSigmoid"] > 2.5) and np.any(pre["hardSigmoid"] < -2.5)

    x = lh.draw_inputs(rng, desc, accept=saturated_both_ways, scale=2.0, T=4, N=3,
                       peephole="[D4H]")
    got = lh.run_forward(x, desc)
    want = harness.reference_forward("LSTM", x, desc)
    for name in ("h", "c", "zState"):
        np.testing.assert_allclose(got[name], want[name], **EXACT, err_msg=name)
    if slot != "activation":  # the gate's block of zState ([i,f,z,o]) holds exact 0s and 1s
        k, H = lh.SLOTS.index(slot), x["recurrentWeight"].shape[-1]
        block = got["zState"][..., k * H:(k + 1) * H]
        assert np.any(block == 0.0) and np.any(block == 1.0)


@pytest.mark.parametrize("training", [False, True], ids=["training=F", "training=T"])
@pytest.mark.parametrize("produceCell", [False, True], ids=["produceCell=F", "produceCell=T"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_output_list_per_flags(produceCell, training, bidirectional, rng):
    # SPEC.md section 5 (pinned): [h]; produceCell [h, c]; training with or without
    # produceCell [h, c, zState]. run_forward checks the count, shapes and dtypes.
    desc = rg.LSTMDescriptor(produceCell=produceCell, training=training,
                             bidirectional=bidirectional)
    x = lh.make_inputs(rng, bidirectional=bidirectional, peephole="[D4H]", mask="[T,N,DH]")
    got = lh.run_forward(x, desc)
    expected = ["h", "c", "zState"] if training else (["h", "c"] if produceCell else ["h"])
    assert list(got) == expected
    want = harness.reference_forward("LSTM", x, desc)
    for name in expected:
        np.testing.assert_allclose(got[name], want[name], **EXACT, err_msg=name)


def test_output_shapes_with_unknown_dimensions(rng):
    # Placeholders with None for T and N: symbolic outputs keep None there, H is known.
    H, I = 3, 4
    g = rg.Graph()
    x = g.placeholder(shape=(None, None, I), dataType=rg.float64)
    R = g.placeholder(shape=(2, 4 * H, H), dataType=rg.float64)
    W = g.placeholder(shape=(8 * H, I), dataType=rg.float64)
    h, c, z = g.LSTM(x, recurrentWeight=R, inputWeight=W,
                     descriptor=rg.LSTMDescriptor(training=True, bidirectional=True))
    assert (h.shape, c.shape, z.shape) == ((None, None, 2 * H), (None, None, 2 * H),
                                           (None, None, 8 * H))
    feeds = {x: rng.standard_normal((4, 2, I)), R: rng.standard_normal((2, 4 * H, H)),
             W: rng.standard_normal((8 * H, I))}
    out = g.run(feeds=feeds, targetTensors=[h, c, z])
    assert out[h].shape == (4, 2, 2 * H) and out[z].shape == (4, 2, 8 * H)


def test_bidirectional_ignores_reverse(rng):
    x = lh.make_inputs(rng, bidirectional=True, peephole="[2,4H]", mask="[T,N,DH]")
    with_reverse = lh.run_forward(x, rg.LSTMDescriptor(training=True, bidirectional=True,
                                                       reverse=True))
    want = harness.reference_forward("LSTM", x, rg.LSTMDescriptor(bidirectional=True))
    for name in ("h", "c", "zState"):
        np.testing.assert_allclose(with_reverse[name], want[name], **EXACT, err_msg=name)


def _permute_gates(array, axis, H, order):
    blocks = np.split(array, array.shape[axis] // H, axis=axis)
    groups = [blocks[k:k + 4] for k in range(0, len(blocks), 4)]  # per direction
    return np.concatenate([g[j] for g in groups for j in order], axis=axis)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_forget_gate_last_is_the_order_i_z_f_o(bidirectional, rng):
    # Reference-free: feeding [i,f,z,o] weights re-ordered to [i,z,f,o] with forgetGateLast
    # gives the same h and c, and zState comes back in [i,z,f,o] order (SPEC.md section 3).
    H = 2
    x = lh.make_inputs(rng, bidirectional=bidirectional, H=H, peephole="[D4H]")
    swap = [0, 2, 1, 3]
    y = dict(x)
    y["recurrentWeight"] = _permute_gates(x["recurrentWeight"], -2, H, swap)
    y["inputWeight"] = _permute_gates(x["inputWeight"], 0, H, swap)
    y["bias"] = _permute_gates(x["bias"], 0, H, swap)
    y["peephole"] = _permute_gates(x["peephole"], 0, H, swap)
    default = lh.run_forward(x, rg.LSTMDescriptor(training=True, bidirectional=bidirectional))
    last = lh.run_forward(y, rg.LSTMDescriptor(training=True, bidirectional=bidirectional,
                                               forgetGateLast=True))
    np.testing.assert_allclose(last["h"], default["h"], **EXACT)
    np.testing.assert_allclose(last["c"], default["c"], **EXACT)
    np.testing.assert_allclose(last["zState"], _permute_gates(default["zState"], -1, H, swap),
                               **EXACT)


def test_single_step_matches_spec_formula(rng):
    # Reference-free: one step written out from SPEC.md section 5, peephole on all four gates.
    N, I, H = 2, 3, 2
    x = lh.make_inputs(rng, T=1, N=N, I=I, H=H, peephole="[D4H]", mask="[T,N,DH]")
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    hm = x["initState"] * x["mask"][0]
    cp = x["initCell"]
    pre = x["source"][0] @ x["inputWeight"].T + x["bias"] + hm @ x["recurrentWeight"].T
    pre += x["peephole"] * np.concatenate([cp] * 4, axis=1)
    a_i, a_f, a_z, a_o = sig(pre[:, :H]), sig(pre[:, H:2 * H]), np.tanh(pre[:, 2 * H:3 * H]), \
        sig(pre[:, 3 * H:])
    c = a_f * cp + a_i * a_z
    h = a_o * np.tanh(c)
    got = lh.run_forward(x, rg.LSTMDescriptor(training=True))
    np.testing.assert_allclose(got["c"][0], c, **EXACT)
    np.testing.assert_allclose(got["h"][0], h, **EXACT)
    np.testing.assert_allclose(got["zState"][0], np.concatenate([a_i, a_f, a_z, a_o], 1),
                               **EXACT)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_absent_inputs_mean_zeros_or_ones(bidirectional, rng):
    # SPEC.md section 6 / DESIGN.md: an omitted optional is zeros (bias, states, peephole)
    # or ones (mask); without W the source is the projected input x·Wᵀ itself.
    desc = rg.LSTMDescriptor(training=True, bidirectional=bidirectional)
    x = lh.make_inputs(rng, bidirectional=bidirectional, peephole="[D4H]", mask="[T,N,DH]")
    full = dict(x)
    full["mask"] = np.ones_like(x["mask"])
    want = lh.run_forward(full, desc)
    for label in ("bias", "initState", "initCell", "peephole"):
        zeros = dict(full)
        zeros[label] = np.zeros_like(x[label])
        absent = {k: v for k, v in full.items() if k != label}
        a, b = lh.run_forward(absent, desc), lh.run_forward(zeros, desc)
        for name in ("h", "c", "zState"):
            np.testing.assert_allclose(a[name], b[name], **EXACT, err_msg=f"no {label}: {name}")
    no_mask = {k: v for k, v in full.items() if k != "mask"}
    got = lh.run_forward(no_mask, desc)
    for name in ("h", "c", "zState"):
        np.testing.assert_allclose(got[name], want[name], **EXACT, err_msg=f"no mask: {name}")
    projected = {k: v for k, v in full.items() if k != "inputWeight"}
    projected["source"] = x["source"] @ x["inputWeight"].T
    got = lh.run_forward(projected, desc)
    for name in ("h", "c", "zState"):
        np.testing.assert_allclose(got[name], want[name], **EXACT, err_msg=f"no W: {name}")


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_layouts_are_equivalent(bidirectional, rng):
    # [1,N,DH] states == [N,DH]; bidirectional peephole [2,4H] == [8H]; a broadcast mask ==
    # its explicit [T,N,DH] broadcast.
    desc = rg.LSTMDescriptor(training=True, bidirectional=bidirectional)
    x = lh.make_inputs(rng, bidirectional=bidirectional, peephole="[D4H]", mask="[T,1,DH]")
    want = lh.run_forward(x, desc)
    T, N, DH = x["source"].shape[0], x["source"].shape[1], x["initState"].shape[1]
    variants = {
        "states[1,N,DH]": {"initState": x["initState"][None], "initCell": x["initCell"][None]},
        "mask[T,N,DH]": {"mask": np.broadcast_to(x["mask"], (T, N, DH)).copy()},
    }
    if bidirectional:
        variants["peephole[2,4H]"] = {"peephole": x["peephole"].reshape(2, -1)}
    for what, change in variants.items():
        got = lh.run_forward({**x, **change}, desc)
        for name in ("h", "c", "zState"):
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{what}: {name}")


def test_descriptor_changes_after_build_do_not_matter(rng):
    x = lh.make_inputs(rng)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64) for k, v in x.items()}
    desc = rg.LSTMDescriptor(produceCell=True)
    outputs = g.LSTM(ph["source"], recurrentWeight=ph["recurrentWeight"],
                     inputWeight=ph["inputWeight"], bias=ph["bias"], initState=ph["initState"],
                     initCell=ph["initCell"], descriptor=desc)
    desc.forgetGateLast, desc.activation, desc.training = True, rg.RNNActivation.relu, True
    assert len(outputs) == 2
    out = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outputs)
    want = harness.reference_forward("LSTM", x, rg.LSTMDescriptor())
    np.testing.assert_allclose(out[outputs[0]], want["h"], **EXACT)
    np.testing.assert_allclose(out[outputs[1]], want["c"], **EXACT)


# float32 against float64 on the same (float32-representable) data. float32 rounds at
# u = 6e-8 per operation; each output goes through dot products of I + H <= 8 terms per step
# and T = 6 steps of a recurrence whose gates are sigmoid/tanh-bounded (|gain| <= ~1 for
# these O(0.5) weights), so errors grow to ~(I + H)·T·u ~ 3e-6 at worst; observed <= 4e-7
# over 40 draws. 2e-5 leaves ample room; a float32 bug (wrong dtype, truncated accumulator,
# mixed-precision indexing) is orders of magnitude larger.
FLOAT32_FORWARD_ATOL = 2e-5


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_float32_matches_float64(bidirectional, rng):
    desc = rg.LSTMDescriptor(training=True, bidirectional=bidirectional)
    x32 = lh.make_inputs(rng, bidirectional=bidirectional, T=6, N=3, I=4, H=4,
                         peephole="[D4H]", mask="[T,N,DH]", scale=0.5, dtype=np.float32)
    x64 = {k: v.astype(np.float64) for k, v in x32.items()}
    got32, got64 = lh.run_forward(x32, desc), lh.run_forward(x64, desc)
    for name in ("h", "c", "zState"):
        assert got32[name].dtype == np.float32
        diff = lh.max_abs_diff(got32[name], got64[name])
        assert diff < FLOAT32_FORWARD_ATOL, f"{name}: float32 vs float64 max abs diff {diff:.2e}"
