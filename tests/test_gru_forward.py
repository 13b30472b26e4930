"""GRU forward (SPEC.md sections 1-5) against the NumPy loop reference: every combination of
direction and descriptor flag, of the three slots' activations, of mask layout, state layout
and optional input; hand-computed steps that pin SPEC.md section 5 for rnngraph and the
reference alike; float32 against float64; bidirectional as two unidirectional ops.
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
    assert_all_close,
    assert_close,
    blas_threads,
    explicit_inputs,
    float32_and_float64,
    forward,
    forward_op,
    hard_sigmoid_saturates,
    make_inputs,
    one_direction,
    reference,
    reference_op,
    relative_error,
    scale_for,
)

CELL = "GRU"
DIRECTIONS = ("fwd", "reverse", "bi", "reverse+bi")
FULL = Case(CELL).with_all_inputs()  # h0 [N,DH], a 0/1 mask [T,N,DH], secondaryBias


def check_forward(case, x) -> dict:
    """[h] (training false) and [h, zState] (training) against the reference; the runner
    checks count, shapes and dtypes. Returns the training outputs."""
    expected = reference(case, x)
    assert_all_close(forward(case, x, training=False), {"h": expected["h"]}, "float64", case.id)
    out = forward(case, x)
    assert_all_close(out, expected, "float64", case.id)
    return out


# --- every flag, direction and mask kind; every activation of every slot -------------------

FLAG_CASES = [
    FULL.but(direction=direction, resetGateFirst=first, resetAfter=after, flipZ=flip,
             fractional_mask=fractional, T=4).param()
    for direction, first, after, flip, fractional in itertools.product(
        DIRECTIONS, *[(False, True)] * 4)
]


@pytest.mark.parametrize("case", FLAG_CASES)
def test_flags_match_reference(case, rng):
    x = make_inputs(case, rng)
    out = check_forward(case, x)
    if case.direction == "reverse+bi":  # SPEC.md section 3: reverse is ignored
        assert_all_close(out, forward(case.but(direction="bi"), x), "identical", case.id)


ACTIVATION_CASES = [
    FULL.but(activations=dict(zip(SLOTS[CELL], names)), resetAfter=after).param()
    for names in itertools.product(ACTIVATIONS, repeat=3) for after in (False, True)
]


@pytest.mark.parametrize("case", ACTIVATION_CASES)
def test_every_activation_combination_matches_reference(case, rng):
    """Every activation in every slot, reset before and after; relu sees both signs and
    hardSigmoid both its linear and saturated parts. (T = 3 and 0.8·N(0, 1) inputs: with
    z and o both unbounded the state grows like a power tower.)"""
    x = make_inputs(case, rng, scale=0.8, accept=lambda pre: hard_sigmoid_saturates(case, pre))
    check_forward(case, x)


def test_case_ids_spell_every_combination():
    """Each pytest id above spells its case, and no two cases of a list share an id."""
    for params, count in ((FLAG_CASES, len(DIRECTIONS) * 2 ** 4),
                          (ACTIVATION_CASES, len(ACTIVATIONS) ** len(SLOTS[CELL]) * 2)):
        assert len({p.id for p in params}) == len(params) == count
        for param in params:
            assert Case.parse(CELL, param.id) == param.values[0], param.id


def test_activation_raw_values_equal_enum_members(rng):
    case = FULL.but(activations={"z": "hardSigmoid", "r": "relu", "o": "none"})
    x = make_inputs(case, rng, scale=scale_for(case))
    by_raw = rg.GRUDescriptor(updateGateActivation=4, resetGateActivation=1,
                              outputGateActivation=0, training=True)
    assert_all_close(forward_op(CELL, x, by_raw), check_forward(case, x), "identical")


def build(x, desc=None, shapes=None, constants=False):
    """GRU on a hand-built graph: placeholders (``shapes`` overrides their static shapes) or,
    with ``constants``, NumPy arrays for all but the source; no descriptor argument when
    ``desc`` is None. Returns (symbolic outputs, a function running the graph)."""
    g = rg.Graph()
    ph = {k: g.placeholder(shape=(shapes or {}).get(k, v.shape), dataType=rg.float64, name=k)
          for k, v in x.items() if k == "source" or not constants}
    outs = g.GRU(ph["source"], **{k: ph.get(k, v) for k, v in x.items() if k != "source"},
                 **({} if desc is None else {"descriptor": desc}))

    def run():
        result = g.run(feeds={t: x[k] for k, t in ph.items()}, targetTensors=outs)
        return dict(zip(("h", "zState"), (result[t] for t in outs)))

    return outs, run


def test_default_descriptor_is_mpsgraphs(rng):
    d = rg.GRUDescriptor()
    assert (d.reverse, d.bidirectional, d.training, d.resetGateFirst, d.resetAfter, d.flipZ) == (
        False, False, False, False, False, False)
    assert (d.updateGateActivation, d.resetGateActivation, d.outputGateActivation) == (
        rg.RNNActivation.sigmoid, rg.RNNActivation.sigmoid, rg.RNNActivation.tanh)
    x = make_inputs(FULL, rng)
    outs, run = build(x)  # no descriptor
    assert len(outs) == 1
    assert_all_close(run(), {"h": reference(FULL, x)["h"]}, "float64")


# --- hand-computed values: SPEC.md section 5 without the reference -------------------------
# H = N = T = 1, no inputWeight, activations none, hp = 2 and x'_z = 0.1, x'_r = 0.1,
# x'_o = 1, R_z = 0.1, R_r = 0.2, R_o = 0.5, b2 = 0.25:
#   z = 0.1 + 2·0.1 = 0.3, r = 0.1 + 2·0.2 = 0.5,
#   reset before: o = 1 + (2·0.5)·0.5 = 1.5;  reset after: o = 1 + 0.5·(2·0.5 + 0.25) = 1.625
#   flipZ false: h = z·hp + (1−z)·o;  flipZ true: h = (1−z)·hp + z·o
# With mask 0 the gates see hm = 0 (z = 0.1, r = 0.1, o = 1 before; 1 + 0.1·0.25 after), but
# the blend still uses the unmasked hp = 2.
HAND = [
    # resetAfter flipZ mask  z    r    o      h
    (False, False, 1.0, 0.3, 0.5, 1.5, 0.3 * 2 + 0.7 * 1.5),  # 1.65
    (False, True, 1.0, 0.3, 0.5, 1.5, 0.7 * 2 + 0.3 * 1.5),  # 1.85
    (True, False, 1.0, 0.3, 0.5, 1.625, 0.3 * 2 + 0.7 * 1.625),  # 1.7375
    (True, True, 1.0, 0.3, 0.5, 1.625, 0.7 * 2 + 0.3 * 1.625),  # 1.8875
    (False, False, 0.0, 0.1, 0.1, 1.0, 0.1 * 2 + 0.9 * 1.0),  # 1.1
    (True, True, 0.0, 0.1, 0.1, 1.025, 0.9 * 2 + 0.1 * 1.025),  # 1.9025
]
NONE = {"z": "none", "r": "none", "o": "none"}


@pytest.mark.parametrize("first", [False, True], ids=["zro", "resetGateFirst"])
@pytest.mark.parametrize("after, flip, mask, z, r, o, h", HAND,
                         ids=[f"resetAfter={a}-flipZ={f}-mask={m:g}" for a, f, m, *_ in HAND])
def test_hand_computed_step(after, flip, mask, z, r, o, h, first):
    case = Case(CELL, activations=NONE, resetGateFirst=first, resetAfter=after, flipZ=flip)

    def blocks(values):  # one value per gate, in the case's gate order (SPEC.md section 3)
        return np.array([values[g] for g in case.gates])

    x = {"source": blocks({"z": 0.1, "r": 0.1, "o": 1.0}).reshape(1, 1, 3),
         "recurrentWeight": blocks({"z": 0.1, "r": 0.2, "o": 0.5}).reshape(3, 1),
         "initState": np.array([[2.0]]), "mask": np.array([[[mask]]]),
         "secondaryBias": np.array([0.25])}
    for name, out in (("rnngraph", forward_op(CELL, x, case.descriptor(training=True))),
                      ("reference", reference_op(CELL, x, case.descriptor()))):
        assert_close(out["h"].ravel(), [h], "hand", name)
        assert_close(out["zState"].ravel(), blocks({"z": z, "r": r, "o": o}), "hand", name)


def test_reverse_stores_each_state_at_its_input_step():
    """SPEC.md section 4 by hand: z = 0, o = x'_o (activations none, R = 0) -> h[t] = x'_o[t];
    with z = 1 the reverse state is carried from t = T−1 down to 0."""

    def inputs(x_z):
        source = np.zeros((3, 1, 3))
        source[:, 0, 0], source[:, 0, 2] = x_z, [1.0, 2.0, 3.0]  # x'_z, x'_o
        return {"source": source, "recurrentWeight": np.zeros((3, 1)),
                "initState": np.array([[5.0]])}

    reverse, fwd = (Case(CELL, d, NONE).descriptor() for d in ("reverse", "fwd"))
    for name, run in (("rnngraph", forward_op), ("reference", reference_op)):
        assert_close(run(CELL, inputs(0.0), reverse)["h"].ravel(), [1, 2, 3], "hand", name)
        # z = 1 keeps hp at t = 2 and 1 (from initState); z = 0 at t = 0
        z = [0.0, 1.0, 1.0]
        assert_close(run(CELL, inputs(z), reverse)["h"].ravel(), [1, 5, 5], "hand", name)
        # forward: t = 0 takes x'_o, then z = 1 keeps it
        assert_close(run(CELL, inputs(z), fwd)["h"].ravel(), [1, 1, 1], "hand", name)


# --- optional inputs and their layouts -----------------------------------------------------

ABSENT_AND_LAYOUTS = [
    *(FULL.but(direction=d, resetAfter=a, inputWeight=False, H=3)
      for d in ("fwd", "bi") for a in (False, True)),
    *(FULL.but(direction=d, resetAfter=True, bias=False) for d in ("fwd", "bi")),
    *(FULL.but(direction=d, resetGateFirst=True, initState=h0)
      for d in ("fwd", "bi") for h0 in (None, "[N,DH]", "[1,N,DH]")),
]


@pytest.mark.parametrize("case", [c.param() for c in ABSENT_AND_LAYOUTS])
def test_absent_inputs_and_state_layouts(case, rng):
    """SPEC.md section 1: without inputWeight the source is x' [T, N, D·3H] (as with W = I);
    an absent bias or initState means zeros; initState [1, N, D·H] is [N, D·H]."""
    x = make_inputs(case, rng)
    assert x["source"].shape[-1] == (case.I if case.inputWeight else case.D * case.G * case.H)
    out = check_forward(case, x)
    explicit = forward(*explicit_inputs(case, x))
    assert_all_close(explicit, out, "identical" if case.inputWeight else "float64", case.id)


MASK_LAYOUTS = ("[T,N,DH]", "[T,N,1]", "[T,1,DH]", "[T,1,1]", "[1,N,DH]", "[1,1,DH]",
                "[N,DH]", "[N,1]", "[DH]", "[1]", "[]")


@pytest.mark.parametrize("case", [
    FULL.but(direction=d, resetAfter=a, mask=layout, fractional_mask=f, T=4, N=3).param()
    for layout in MASK_LAYOUTS for d in ("fwd", "bi") for a in (False, True)
    for f in (False, True)])
def test_every_broadcastable_mask_layout(case, rng):
    """0/1 and fractional masks of every layout that broadcasts to [T, N, D·H]."""
    x = make_inputs(case, rng)
    out = check_forward(case, x)
    full = np.ascontiguousarray(np.broadcast_to(x["mask"], (case.T, case.N, case.DH)))
    assert_all_close(forward(case.but(mask="[T,N,DH]"), {**x, "mask": full}), out, "identical",
                     case.id)


def test_mask_of_ones_equals_no_mask_and_mask_matters(rng):
    case = FULL.but(resetAfter=True, T=4)
    x = make_inputs(case, rng)
    unmasked = {k: v for k, v in x.items() if k != "mask"}
    plain = forward(case.but(mask=None), unmasked)
    ones = forward(case, {**x, "mask": np.ones_like(x["mask"])})
    assert_all_close(ones, plain, "identical")
    assert relative_error(forward(case, x)["h"], plain["h"]) > 1e-3


@pytest.mark.parametrize("direction", ["fwd", "bi"])
def test_secondary_bias_is_used_only_with_reset_after(direction, rng):
    case = FULL.but(direction=direction, T=4)
    x = make_inputs(case, rng)
    without = {k: v for k, v in x.items() if k != "secondaryBias"}
    for after in (False, True):
        with_b2 = check_forward(case.but(resetAfter=after), x)
        no_b2 = check_forward(case.but(resetAfter=after, secondaryBias=False), without)
        if after:
            assert relative_error(with_b2["h"], no_b2["h"]) > 1e-3
        else:
            assert_all_close(with_b2, no_b2, "identical", "reset-before ignores secondaryBias")


@pytest.mark.parametrize("threads", [1, 2])
def test_bidirectional_is_two_independent_directions(threads, rng):
    """Each half of h and zState is a unidirectional op on its blocks (1 and 2 threads: the
    directions may run concurrently)."""
    case = FULL.but(direction="bi", resetAfter=True, flipZ=True, T=4)
    x = make_inputs(case, rng)
    with blas_threads(threads):
        both = forward(case, x)
        for d in (0, 1):
            half, half_x = one_direction(case, x, d)
            GH = case.G * case.H
            h, z = slice(d * case.H, (d + 1) * case.H), slice(d * GH, (d + 1) * GH)
            assert_all_close({"h": both["h"][..., h], "zState": both["zState"][..., z]},
                             forward(half, half_x), "identical", half.direction)


SIZES = ("T1", "N1", "T1-N1-I2-H5", "T5-N3-I7-H4")  # H > I, I > H, T = 1, N = 1


@pytest.mark.parametrize("case", [
    Case.parse(CELL, f"{d}{'-resetAfter' if a else ''}-h0-b2-mask-{size}").param()
    for size in SIZES for d in ("fwd", "reverse", "bi") for a in (False, True)])
def test_sizes(case, rng):
    check_forward(case, make_inputs(case, rng))


# --- building the op -----------------------------------------------------------------------

def test_unknown_dimensions_at_build_time(rng):
    case = FULL.but(direction="bi", T=4, N=3)
    x = make_inputs(case, rng)
    dynamic = {"source": (None, None, 3), "initState": (None, None), "mask": (None, None, None)}
    outs, run = build(x, case.descriptor(training=True), shapes=dynamic)
    assert [t.shape for t in outs] == [(None, None, case.DH), (None, None, case.DH * case.G)]
    assert_all_close(run(), reference(case, x), "float64")


def test_descriptor_is_copied_when_the_op_is_built(rng):
    case = FULL.but(resetAfter=True, T=4)
    x = make_inputs(case, rng)
    desc = case.descriptor()
    outs, run = build(x, desc)
    desc.resetAfter, desc.flipZ, desc.training = False, True, True
    assert len(outs) == 1
    assert_all_close(run(), {"h": reference(case, x)["h"]}, "float64")


def test_numpy_arrays_as_arguments_become_constants(rng):
    case = FULL.but(resetAfter=True, T=4)
    x = make_inputs(case, rng)
    _, run = build(x, case.descriptor(training=True), constants=True)
    assert_all_close(run(), reference(case, x), "float64")


# --- float32 against float64 ---------------------------------------------------------------

@pytest.mark.parametrize("case", [FULL.but(direction=d, resetAfter=a, flipZ=True, T=8, N=3,
                                           I=5, H=4).param()
                                  for d in ("fwd", "reverse", "bi") for a in (False, True)])
def test_float32_matches_float64(case, rng):
    x32, x64 = float32_and_float64(case, rng)  # the same numbers in both dtypes
    out32, out64 = forward(case.but(dtype="float32"), x32), forward(case, x64)
    assert_all_close(out32, out64, "float32_forward", case.id)
    assert np.any(out32["h"] != out64["h"])  # really computed in float32
