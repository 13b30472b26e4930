"""GRU forward (SPEC.md sections 1, 3, 4, 5) against the NumPy loop reference, a few
hand-computed values that pin the contract independently of the reference, and the errors
specific to GRU / GRUGradients.

Random inputs come from a generator seeded by the test's own key (``zlib.crc32``), so every
run sees the same numbers (the ``rng`` fixture of conftest.py seeds from ``hash(nodeid)``,
which Python salts per process).
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import harness
import rnngraph as rg
from reference import numpy_rnn

ACTIVATIONS = numpy_rnn.ACTIVATION_NAMES  # none, relu, tanh, sigmoid, hardSigmoid
SLOTS = ("updateGateActivation", "resetGateActivation", "outputGateActivation")
ATOL64 = 1e-12  # float64 against the loop reference: only summation order differs


def make_rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def inputs(key, *, T=3, N=2, I=3, H=2, bidirectional=False, inputWeight=True, bias=True,
           initState=True, mask=True, secondaryBias=True, dtype=np.float64):
    """Random GRU inputs in SPEC.md layouts (a 0/1 mask, a secondaryBias by default)."""
    return harness.make_inputs("GRU", make_rng(*key), T=T, N=N, I=I, H=H,
                               bidirectional=bidirectional, inputWeight=inputWeight, bias=bias,
                               initState=initState, mask=mask, secondaryBias=secondaryBias,
                               dtype=dtype)


def run_gru(x, desc, placeholder_shapes=None):
    """Build GRU on placeholders (optionally with other static shapes, e.g. None dims) and run
    it. Returns (symbolic outputs, arrays) in the op's return order."""
    g = rg.Graph()
    dtype = rg.float64 if x["source"].dtype == np.float64 else rg.float32
    shapes = {k: v.shape for k, v in x.items()} | (placeholder_shapes or {})
    ph = {k: g.placeholder(shape=shapes[k], dataType=dtype, name=k) for k in x}
    outs = g.GRU(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                 descriptor=desc)
    result = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outs)
    return outs, [result[t] for t in outs]


def descriptor(**flags):
    return rg.GRUDescriptor(**flags)


def check_against_reference(x, desc, atol=ATOL64):
    """Both training settings: [h] / [h, zState] with exact shapes, values as the reference."""
    T, N = x["source"].shape[:2]
    H = x["recurrentWeight"].shape[-1]
    D = 2 if desc.bidirectional else 1
    expected = harness.reference_forward("GRU", x, desc)

    inference = desc.copy()
    inference.training = False
    symbolic, (h,) = run_gru(x, inference)
    assert len(symbolic) == 1
    assert symbolic[0].shape == (T, N, D * H) and h.shape == (T, N, D * H)
    assert h.dtype == x["source"].dtype
    np.testing.assert_allclose(h, expected["h"], rtol=0, atol=atol)

    training = desc.copy()
    training.training = True
    symbolic, (h_train, z_state) = run_gru(x, training)
    assert [t.shape for t in symbolic] == [(T, N, D * H), (T, N, D * 3 * H)]
    assert z_state.shape == (T, N, D * 3 * H) and z_state.dtype == x["source"].dtype
    np.testing.assert_allclose(h_train, expected["h"], rtol=0, atol=atol)
    np.testing.assert_allclose(z_state, expected["zState"], rtol=0, atol=atol)
    return h_train, z_state


# --- descriptor flags -------------------------------------------------------------------------

@pytest.mark.parametrize("direction", ["fwd", "rev", "bi"])
@pytest.mark.parametrize("resetGateFirst", [False, True], ids=["zro", "resetGateFirst"])
@pytest.mark.parametrize("flipZ", [False, True], ids=["noflip", "flipZ"])
@pytest.mark.parametrize("resetAfter", [False, True], ids=["resetBefore", "resetAfter"])
def test_flags_match_reference(resetAfter, flipZ, resetGateFirst, direction):
    bidirectional = direction == "bi"
    x = inputs(("flags", resetAfter, flipZ, resetGateFirst, direction), T=4,
               bidirectional=bidirectional)
    desc = descriptor(resetAfter=resetAfter, flipZ=flipZ, resetGateFirst=resetGateFirst,
                      reverse=direction == "rev", bidirectional=bidirectional)
    check_against_reference(x, desc)


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("slot", SLOTS)
@pytest.mark.parametrize("resetAfter", [False, True], ids=["resetBefore", "resetAfter"])
def test_each_activation_in_each_slot(resetAfter, slot, activation):
    x = inputs(("activation", resetAfter, slot, activation), T=4)
    desc = descriptor(resetAfter=resetAfter, **{slot: getattr(rg.RNNActivation, activation)})
    _, z_state = check_against_reference(x, desc)
    # The slot really took the activation: its zState block ([z, r, o], H = 2) lies in the
    # activation's range.
    k = SLOTS.index(slot)
    block = z_state[..., 2 * k:2 * (k + 1)]
    if activation in ("relu", "sigmoid", "hardSigmoid"):
        assert block.min() >= 0
    if activation in ("tanh", "sigmoid", "hardSigmoid"):
        assert np.abs(block).max() <= 1


def test_activation_raw_values_equal_enum_members():
    x = inputs(("raw",))
    by_enum = descriptor(updateGateActivation=rg.RNNActivation.hardSigmoid,
                         resetGateActivation=rg.RNNActivation.relu,
                         outputGateActivation=rg.RNNActivation.none)
    by_raw = descriptor(updateGateActivation=4, resetGateActivation=1, outputGateActivation=0)
    np.testing.assert_array_equal(run_gru(x, by_enum)[1][0], run_gru(x, by_raw)[1][0])
    check_against_reference(x, by_raw)


def test_default_descriptor_is_mpsgraphs():
    d = rg.GRUDescriptor()
    assert (d.reverse, d.bidirectional, d.training, d.resetGateFirst, d.resetAfter, d.flipZ) == (
        False, False, False, False, False, False)
    assert d.updateGateActivation == rg.RNNActivation.sigmoid
    assert d.resetGateActivation == rg.RNNActivation.sigmoid
    assert d.outputGateActivation == rg.RNNActivation.tanh
    x = inputs(("default",))
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    outs = g.GRU(ph["source"], **{k: v for k, v in ph.items() if k != "source"})  # no descriptor
    assert len(outs) == 1
    h = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outs)[outs[0]]
    np.testing.assert_allclose(h, numpy_rnn.gru(**x)["h"], rtol=0, atol=ATOL64)


# --- hand-computed values: pin SPEC.md section 5 without the reference -------------------------
# H = N = T = 1, no inputWeight, activations `none`, hp = 2 and
# x'_z = 0.1, x'_r = 0.1, x'_o = 1, R_z = 0.1, R_r = 0.2, R_o = 0.5, b2 = 0.25:
#   z = 0.1 + 2·0.1 = 0.3, r = 0.1 + 2·0.2 = 0.5,
#   reset before: o = 1 + (2·0.5)·0.5 = 1.5;  reset after: o = 1 + 0.5·(2·0.5 + 0.25) = 1.625
#   flipZ=False: h = z·hp + (1−z)·o;  flipZ=True: h = (1−z)·hp + z·o
# With mask 0 the gates see hm = 0 (z = 0.1, r = 0.1, o = 1 before; 1 + 0.1·0.25 after), but the
# blend still uses the unmasked hp = 2.
HAND = [
    # resetAfter flipZ  mask  h
    (False, False, 1.0, 0.3 * 2 + 0.7 * 1.5),  # 1.65
    (False, True, 1.0, 0.7 * 2 + 0.3 * 1.5),  # 1.85
    (True, False, 1.0, 0.3 * 2 + 0.7 * 1.625),  # 1.7375
    (True, True, 1.0, 0.7 * 2 + 0.3 * 1.625),  # 1.8875
    (False, False, 0.0, 0.1 * 2 + 0.9 * 1.0),  # 1.1
    (True, True, 0.0, 0.9 * 2 + 0.1 * 1.025),  # 1.9025
]


@pytest.mark.parametrize("resetGateFirst", [False, True], ids=["zro", "rzo"])
@pytest.mark.parametrize("resetAfter, flipZ, mask, expected", HAND,
                         ids=[f"resetAfter={a}-flipZ={f}-mask={m:g}" for a, f, m, _ in HAND])
def test_hand_computed_step(resetAfter, flipZ, mask, expected, resetGateFirst):
    z, r, o = 0, 1, 2
    order = [r, z, o] if resetGateFirst else [z, r, o]
    xp = np.array([0.1, 0.1, 1.0])[order]
    R = np.array([0.1, 0.2, 0.5])[order]
    x = {"source": xp.reshape(1, 1, 3), "recurrentWeight": R.reshape(3, 1),
         "initState": np.array([[2.0]]), "mask": np.array([[[mask]]]),
         "secondaryBias": np.array([0.25])}
    none = rg.RNNActivation.none
    desc = descriptor(resetAfter=resetAfter, flipZ=flipZ, resetGateFirst=resetGateFirst,
                      training=True, updateGateActivation=none, resetGateActivation=none,
                      outputGateActivation=none)
    _, (h, z_state) = run_gru(x, desc)
    np.testing.assert_allclose(h.ravel(), [expected], rtol=0, atol=1e-15)
    zz, rr = (0.3, 0.5) if mask else (0.1, 0.1)
    oo = {(False, 1.0): 1.5, (True, 1.0): 1.625, (False, 0.0): 1.0, (True, 0.0): 1.025}
    activated = np.array([zz, rr, oo[resetAfter, mask]])
    np.testing.assert_allclose(z_state.ravel(), activated[order], rtol=0, atol=1e-15)


def test_reverse_stores_each_state_at_its_input_step():
    """SPEC.md section 4 by hand: z = 0, o = x'_o (activations none, R = 0) -> h[t] = x'_o[t];
    with z = 1 the reverse state is carried from t = T−1 down to 0."""
    T = 3
    none = rg.RNNActivation.none
    xp = np.zeros((T, 1, 3))
    xp[:, 0, 2] = [1.0, 2.0, 3.0]  # x'_o
    x = {"source": xp, "recurrentWeight": np.zeros((3, 1)), "initState": np.array([[5.0]])}
    desc = descriptor(reverse=True, updateGateActivation=none, resetGateActivation=none,
                      outputGateActivation=none)
    np.testing.assert_array_equal(run_gru(x, desc)[1][0].ravel(), [1.0, 2.0, 3.0])
    x["source"][:, 0, 0] = [0.0, 1.0, 1.0]  # z = 1 keeps hp at t = 2, 1; z = 0 at t = 0
    np.testing.assert_array_equal(run_gru(x, desc)[1][0].ravel(), [1.0, 5.0, 5.0])
    desc.reverse = False  # forward: t = 0 takes x'_o, then z = 1 keeps it
    np.testing.assert_array_equal(run_gru(x, desc)[1][0].ravel(), [1.0, 1.0, 1.0])


# --- optional inputs, layouts, sizes -----------------------------------------------------------

@pytest.mark.parametrize("resetAfter", [False, True], ids=["resetBefore", "resetAfter"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_without_input_weight_source_is_projected(bidirectional, resetAfter):
    H, D = 3, 2 if bidirectional else 1
    x = inputs(("noW", bidirectional, resetAfter), H=H, bidirectional=bidirectional,
               inputWeight=False)
    assert x["source"].shape == (3, 2, D * 3 * H)  # [T, N, 3H] / [T, N, 6H]
    desc = descriptor(bidirectional=bidirectional, resetAfter=resetAfter)
    check_against_reference(x, desc)
    # Same as giving W = identity on the projected source.
    with_identity = dict(x, inputWeight=np.eye(D * 3 * H))
    np.testing.assert_allclose(run_gru(with_identity, desc)[1][0], run_gru(x, desc)[1][0],
                               rtol=0, atol=ATOL64)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_bias_absent_means_zeros(bidirectional):
    x = inputs(("nobias", bidirectional), bidirectional=bidirectional, bias=False)
    desc = descriptor(bidirectional=bidirectional, resetAfter=True)
    check_against_reference(x, desc)
    zeros = dict(x, bias=np.zeros(x["recurrentWeight"].shape[-2] * (2 if bidirectional else 1)))
    np.testing.assert_array_equal(run_gru(zeros, desc)[1][0], run_gru(x, desc)[1][0])


@pytest.mark.parametrize("layout", ["absent", "[N,DH]", "[1,N,DH]"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_init_state_layouts(bidirectional, layout):
    x = inputs(("init", bidirectional, layout), bidirectional=bidirectional)
    desc = descriptor(bidirectional=bidirectional, resetGateFirst=True)
    N, DH = x["initState"].shape
    flat = run_gru(x, desc)[1][0]
    if layout == "absent":
        del x["initState"]
        zeros = run_gru(dict(x, initState=np.zeros((N, DH))), desc)[1][0]
        np.testing.assert_array_equal(run_gru(x, desc)[1][0], zeros)
    elif layout == "[1,N,DH]":
        x["initState"] = x["initState"].reshape(1, N, DH)
        np.testing.assert_array_equal(run_gru(x, desc)[1][0], flat)
    check_against_reference(x, desc)


MASKS = ["[T,N,DH]", "[T,N,1]", "[T,1,DH]", "[T,1,1]", "[1,N,DH]", "[N,DH]", "[DH]", "[1]"]


@pytest.mark.parametrize("mask_shape", MASKS)
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_mask_broadcast(bidirectional, mask_shape):
    T, N, H = 4, 3, 2
    D = 2 if bidirectional else 1
    x = inputs(("mask", bidirectional, mask_shape), T=T, N=N, H=H, bidirectional=bidirectional)
    sizes = {"T": T, "N": N, "DH": D * H, "1": 1}
    shape = tuple(sizes[s] for s in mask_shape.strip("[]").split(","))
    mask = (make_rng("maskvalues", mask_shape).random(shape) > 0.4).astype(np.float64)
    mask.flat[0] = 0.0  # at least one zero, and (size permitting) one one
    mask.flat[-1] = 1.0
    x["mask"] = mask
    for resetAfter in (False, True):
        desc = descriptor(bidirectional=bidirectional, resetAfter=resetAfter, training=True)
        h, _ = check_against_reference(x, desc)
        # Broadcasting by hand gives the same result.
        full = dict(x, mask=np.ascontiguousarray(np.broadcast_to(mask, (T, N, D * H))))
        np.testing.assert_array_equal(run_gru(full, desc)[1][0], h)


def test_mask_of_ones_equals_no_mask_and_mask_matters():
    x = inputs(("maskones",), T=4)
    desc = descriptor(resetAfter=True)
    masked = run_gru(x, desc)[1][0]
    ones = run_gru(dict(x, mask=np.ones_like(x["mask"])), desc)[1][0]
    del x["mask"]
    unmasked = run_gru(x, desc)[1][0]
    np.testing.assert_array_equal(ones, unmasked)
    assert np.abs(masked - unmasked).max() > 1e-3


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_secondary_bias_is_unused_with_reset_before(bidirectional):
    x = inputs(("b2", bidirectional), T=4, bidirectional=bidirectional)
    without = {k: v for k, v in x.items() if k != "secondaryBias"}
    before = descriptor(bidirectional=bidirectional, training=True)
    h, z = run_gru(x, before)[1]
    h0, z0 = run_gru(without, before)[1]
    np.testing.assert_array_equal(h, h0)
    np.testing.assert_array_equal(z, z0)
    check_against_reference(x, before)
    # ...and used with resetAfter.
    after = descriptor(bidirectional=bidirectional, resetAfter=True)
    h_b2, h_no = run_gru(x, after)[1][0], run_gru(without, after)[1][0]
    assert np.abs(h_b2 - h_no).max() > 1e-3
    check_against_reference(x, after)
    check_against_reference(without, after)


def test_reverse_is_ignored_when_bidirectional():
    x = inputs(("birev",), T=4, bidirectional=True)
    plain = run_gru(x, descriptor(bidirectional=True, training=True))[1]
    with_reverse = run_gru(x, descriptor(bidirectional=True, reverse=True, training=True))[1]
    for a, b in zip(plain, with_reverse):
        np.testing.assert_array_equal(a, b)


def test_bidirectional_halves_are_the_two_unidirectional_ops():
    T, N, I, H = 4, 2, 3, 2
    x = inputs(("halves",), T=T, N=N, I=I, H=H, bidirectional=True)
    flags = dict(resetAfter=True, flipZ=True, training=True)
    h, z = run_gru(x, descriptor(bidirectional=True, **flags))[1]
    for d, reverse in ((0, False), (1, True)):
        half = {"source": x["source"], "recurrentWeight": x["recurrentWeight"][d],
                "inputWeight": x["inputWeight"][d * 3 * H:(d + 1) * 3 * H],
                "bias": x["bias"][d * 3 * H:(d + 1) * 3 * H],
                "initState": x["initState"][:, d * H:(d + 1) * H],
                "mask": x["mask"][..., d * H:(d + 1) * H],
                "secondaryBias": x["secondaryBias"][d * H:(d + 1) * H]}
        hd, zd = run_gru(half, descriptor(reverse=reverse, **flags))[1]
        np.testing.assert_array_equal(h[..., d * H:(d + 1) * H], hd)
        np.testing.assert_array_equal(z[..., d * 3 * H:(d + 1) * 3 * H], zd)


SIZES = [
    # T  N  I  H
    (1, 2, 3, 2),
    (3, 1, 3, 2),
    (1, 1, 2, 5),
    (5, 3, 7, 4),
]


@pytest.mark.parametrize("direction", ["fwd", "rev", "bi"])
@pytest.mark.parametrize("T, N, I, H", SIZES, ids=[f"T{t}-N{n}-I{i}-H{h}" for t, n, i, h in SIZES])
def test_sizes(T, N, I, H, direction):
    bidirectional = direction == "bi"
    x = inputs(("sizes", T, N, I, H, direction), T=T, N=N, I=I, H=H, bidirectional=bidirectional)
    for resetAfter in (False, True):
        desc = descriptor(bidirectional=bidirectional, reverse=direction == "rev",
                          resetAfter=resetAfter)
        check_against_reference(x, desc)


def test_unknown_dimensions_at_build_time():
    x = inputs(("dynamic",), T=4, N=3, bidirectional=True)
    desc = descriptor(bidirectional=True, training=True)
    dynamic = {"source": (None, None, 3), "initState": (None, None), "mask": (None, None, None)}
    symbolic, (h, z) = run_gru(x, desc, dynamic)
    assert symbolic[0].shape == (None, None, 4) and symbolic[1].shape == (None, None, 12)
    expected = harness.reference_forward("GRU", x, desc)
    np.testing.assert_allclose(h, expected["h"], rtol=0, atol=ATOL64)
    np.testing.assert_allclose(z, expected["zState"], rtol=0, atol=ATOL64)


def test_descriptor_is_copied_when_the_op_is_built():
    x = inputs(("copy",), T=4)
    desc = descriptor(resetAfter=True)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    outs = g.GRU(ph["source"], **{k: v for k, v in ph.items() if k != "source"}, descriptor=desc)
    desc.resetAfter, desc.flipZ, desc.training = False, True, True
    h = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outs)[outs[0]]
    assert len(outs) == 1
    np.testing.assert_allclose(h, numpy_rnn.gru(**x, resetAfter=True)["h"], rtol=0, atol=ATOL64)


def test_numpy_arrays_as_arguments_become_constants():
    x = inputs(("constants",), T=4)
    desc = descriptor(resetAfter=True, training=True)
    g = rg.Graph()
    src = g.placeholder(shape=x["source"].shape, dataType=rg.float64, name="x")
    h, z = g.GRU(src, **{k: v for k, v in x.items() if k != "source"}, descriptor=desc)
    out = g.run(feeds={src: x["source"]}, targetTensors=[h, z])
    expected = harness.reference_forward("GRU", x, desc)
    np.testing.assert_allclose(out[h], expected["h"], rtol=0, atol=ATOL64)
    np.testing.assert_allclose(out[z], expected["zState"], rtol=0, atol=ATOL64)


# --- float32 against float64 -------------------------------------------------------------------

@pytest.mark.parametrize("resetAfter", [False, True], ids=["resetBefore", "resetAfter"])
@pytest.mark.parametrize("direction", ["fwd", "rev", "bi"])
def test_float32_matches_float64(direction, resetAfter):
    # Inputs of O(1) and T = 8: float32 rounding (2^-24 ≈ 6e-8 per operation) accumulates to
    # ~1e-7 (measured: at most 2.0e-7); 2e-6 absolute leaves a 10x margin.
    T, N, I, H = 8, 3, 5, 4
    bidirectional = direction == "bi"
    x64 = inputs(("f32", direction, resetAfter), T=T, N=N, I=I, H=H,
                 bidirectional=bidirectional)
    x32 = {k: v.astype(np.float32) for k, v in x64.items()}
    x64 = {k: v.astype(np.float64) for k, v in x32.items()}  # the same numbers in both
    desc = descriptor(bidirectional=bidirectional, reverse=direction == "rev",
                      resetAfter=resetAfter, flipZ=True, training=True)
    h32, z32 = run_gru(x32, desc)[1]
    h64, z64 = run_gru(x64, desc)[1]
    assert h32.dtype == np.float32 and z32.dtype == np.float32
    np.testing.assert_allclose(h32, h64, rtol=0, atol=2e-6)
    np.testing.assert_allclose(z32, z64, rtol=0, atol=2e-6)
    assert np.abs(h32 - h64).max() > 0  # really computed in float32


# --- errors specific to GRU --------------------------------------------------------------------

def _graph_with(x, dtype=rg.float64):
    g = rg.Graph()
    return g, {k: g.placeholder(shape=v.shape, dataType=dtype, name=k) for k, v in x.items()}


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_recurrent_weight_of_four_gates_is_rejected(bidirectional):
    H = 2
    x = inputs(("err-R", bidirectional), H=H, bidirectional=bidirectional)
    x["recurrentWeight"] = np.zeros((2, 4 * H, H) if bidirectional else (4 * H, H))
    g, ph = _graph_with(x)
    with pytest.raises(ValueError, match=r"GRU.*recurrentWeight") as info:
        g.GRU(ph.pop("source"), **ph, descriptor=descriptor(bidirectional=bidirectional))
    assert ("[2, 3H, H]" if bidirectional else "[3H, H]") in str(info.value)
    assert "GRU" in str(info.value)


def test_recurrent_weight_checked_at_run_time_when_unknown_at_build_time():
    H = 2
    x = inputs(("err-R-run",), H=H)
    x["recurrentWeight"] = np.zeros((4 * H, H))
    g, ph = _graph_with({k: v for k, v in x.items() if k != "recurrentWeight"})
    R = g.placeholder(shape=(None, None), dataType=rg.float64, name="R")
    src = ph.pop("source")
    (h,) = g.GRU(src, recurrentWeight=R, **ph)
    feeds = {ph[k]: v for k, v in x.items() if k in ph} | {src: x["source"],
                                                            R: x["recurrentWeight"]}
    with pytest.raises(ValueError, match=r"GRU.*recurrentWeight.*\[3H, H\]"):
        g.run(feeds=feeds, targetTensors=[h])


@pytest.mark.parametrize("case", ["uni-2H", "uni-H+1", "bi-H", "uni-[1,H]"])
def test_secondary_bias_of_wrong_size_is_rejected(case):
    H = 3
    bidirectional = case.startswith("bi")
    x = inputs(("err-b2", case), H=H, bidirectional=bidirectional)
    x["secondaryBias"] = np.zeros({"uni-2H": (2 * H,), "uni-H+1": (H + 1,), "bi-H": (H,),
                                   "uni-[1,H]": (1, H)}[case])
    for resetAfter in (False, True):  # wrong even where it is unused
        g, ph = _graph_with(x)
        with pytest.raises(ValueError, match=r"GRU: secondaryBias"):
            g.GRU(ph.pop("source"), **ph,
                  descriptor=descriptor(bidirectional=bidirectional, resetAfter=resetAfter))


def _gradient_graph(x, desc, **replace):
    """Placeholders for a GRUGradients call; ``replace`` overrides arguments (None drops)."""
    T, N = x["source"].shape[:2]
    H = x["recurrentWeight"].shape[-1]
    D = 2 if desc.bidirectional else 1
    arrays = dict(x, sourceGradient=np.zeros((T, N, D * H)), zState=np.zeros((T, N, D * 3 * H)),
                  outputFwd=np.zeros((T, N, D * H)))
    g, ph = _graph_with(arrays)
    kwargs = {k: v for k, v in ph.items() if k != "source"}
    for label, shape in replace.items():
        if shape is None:
            kwargs[label] = None
        else:
            kwargs[label] = g.placeholder(shape=shape, dataType=rg.float64, name=label)
    return g, ph["source"], kwargs


def test_gradients_without_output_fwd_are_rejected():
    x = inputs(("err-outputFwd",))
    desc = descriptor(resetAfter=True)
    g, src, kwargs = _gradient_graph(x, desc)
    del kwargs["outputFwd"]
    with pytest.raises(TypeError, match="outputFwd"):
        g.GRUGradients(src, **kwargs, descriptor=desc)
    with pytest.raises(ValueError, match=r"GRUGradients: outputFwd"):
        g.GRUGradients(src, **kwargs, outputFwd=None, descriptor=desc)


@pytest.mark.parametrize("label, shape", [
    ("outputFwd", (3, 2, 6)),  # [T, N, 3H] instead of [T, N, H]
    ("outputFwd", (4, 2, 2)),  # wrong T
    ("outputFwd", (2, 6)),  # wrong rank
    ("zState", (3, 2, 8)),  # [T, N, 4H]
    ("secondaryBias", (4,)),  # [2H] for a unidirectional op
    ("recurrentWeight", (8, 2)),  # [4H, H]
], ids=lambda v: str(v).replace(" ", ""))
def test_gradient_inputs_of_wrong_shape_are_rejected(label, shape):
    x = inputs(("err-grad", label, shape), T=3, N=2, H=2)
    desc = descriptor(resetAfter=True)
    g, src, kwargs = _gradient_graph(x, desc, **{label: shape})
    with pytest.raises(ValueError, match=rf"GRUGradients: {label}"):
        g.GRUGradients(src, **kwargs, descriptor=desc)


@pytest.mark.parametrize("label", ["initCell", "peephole", "cellOutputFwd", "cellGradient"])
def test_lstm_only_arguments_are_rejected(label):
    x = inputs(("err-lstm", label))
    g, ph = _graph_with(x)
    extra = g.placeholder(shape=(2, 2), dataType=rg.float64, name=label)
    src = ph.pop("source")
    with pytest.raises(TypeError, match=label):
        g.GRU(src, **ph, **{label: extra})
    g2, src2, kwargs = _gradient_graph(x, descriptor())
    with pytest.raises(TypeError, match=label):
        g2.GRUGradients(src2, **kwargs, **{label: extra})


def test_lstm_descriptor_is_rejected():
    x = inputs(("err-desc",))
    g, ph = _graph_with(x)
    with pytest.raises(TypeError, match=r"GRU: descriptor: expected GRUDescriptor"):
        g.GRU(ph.pop("source"), **ph, descriptor=rg.LSTMDescriptor())


def test_gradient_descriptor_must_match_the_forward_op():
    x = inputs(("err-mismatch",))
    g, ph = _graph_with(x)
    src = ph.pop("source")
    h, z = g.GRU(src, **ph, descriptor=descriptor(resetAfter=True, training=True))
    dy = g.placeholder(shape=h.shape, dataType=rg.float64, name="dy")
    with pytest.raises(ValueError, match=r"GRUGradients: descriptor: resetAfter"):
        g.GRUGradients(src, **ph, sourceGradient=dy, zState=z, outputFwd=h,
                       descriptor=descriptor(resetAfter=False))


def test_unprojected_source_of_wrong_width_is_rejected():
    H = 2
    x = inputs(("err-src",), H=H, inputWeight=False)
    x["source"] = np.zeros((3, 2, 4 * H))
    g, ph = _graph_with(x)
    with pytest.raises(ValueError, match=r"GRU: source"):
        g.GRU(ph.pop("source"), **ph)
