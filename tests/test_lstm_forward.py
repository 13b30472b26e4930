"""LSTM forward (SPEC.md sections 1-5) against the NumPy loop reference: every activation of
every slot in three directions, and the option layouts (states, peepholes, masks, absent W /
bias, sizes) in all four directions; each run's c and h are also re-derived from the gates
it returns (zState) by SPEC section 5's cell update. Without the reference: one step by
hand, forgetGateLast as a gate permutation, absent inputs as zeros / ones, equivalent
layouts, reverse ignored when bidirectional, the returned list per training / produceCell,
float32 against float64 and bidirectional as two unidirectional ops.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import rnngraph as rg
from reference import numpy_rnn
from toolkit import (
    ACTIVATIONS,
    KINKS,
    SLOTS,
    Case,
    assert_all_close,
    assert_close,
    blas_threads,
    cases,
    float32_and_float64,
    forward,
    make_inputs,
    one_direction,
    reference,
    scale_for,
)
from toolkit.spec import SLOT_TOKENS, output_names

CELL = "LSTM"
DIRECTIONS = ("fwd", "reverse", "bi", "reverse+bi")

# Every slot × every activation (a slot's default gives the same case for every slot) in
# three directions, with both states and a peephole ([2,4H] when bidirectional).
ACTIVATION_CASES = list({
    case.id: case.param() for case in (
        Case(CELL, direction, {slot: activation}, initState="[N,DH]", initCell="[N,DH]",
             peephole="[2,4H]" if direction == "bi" else "[D4H]")
        for slot in SLOTS[CELL] for activation in ACTIVATIONS
        for direction in ("fwd", "reverse", "bi"))
}.values())
# Option layouts, each in every direction (the direction token goes first).
OPTIONS = ("", "h0", "c0", "h0-c0", "h0[1,N,DH]-c0[1,N,DH]", "forgetGateLast-h0-c0-peephole",
           "noW-h0-c0-peephole", "nobias-h0-c0", "noW-nobias-h0-c0", "h0-c0-mask",
           "h0-c0-mask[T,N,1]", "h0-c0-mask[T,1,DH]", "h0-c0-mask[N,DH]", "h0-c0-mask[T,1,1]",
           "h0-c0-peephole-fracmask", "h0-c0-peephole-T1", "h0-c0-mask-N1",
           "h0-c0-peephole-I5-H3", "h0-c0-I2-H4")
OPTION_CASES = cases(
    CELL, *(f"{direction}-{options}".rstrip("-") for direction in DIRECTIONS
            for options in OPTIONS),
    "bi-h0-c0-peephole", "reverse+bi-forgetGateLast-h0-c0-peephole[2,4H]",
    "reverse+bi-forgetGateLast-i=hardSigmoid-act=sigmoid-h0[1,N,DH]-c0-peephole[2,4H]-"
    "mask[T,N,1]",
    "bi-forgetGateLast-z=relu-o=hardSigmoid-h0-c0[1,N,DH]-peephole[2,4H]-fracmask[T,1,DH]",
    # every slot off its default at once (a bounded forget gate: the cell cannot explode)
    "fwd-i=tanh-f=hardSigmoid-z=relu-o=none-act=sigmoid-h0-c0-peephole-fracmask",
    "fwd-forgetGateLast-i=relu-f=tanh-z=none-o=hardSigmoid-act=relu-h0[1,N,DH]-c0-peephole-"
    "mask[T,N,1]")


def test_case_ids_are_distinct_and_spell_their_cases():
    params = ACTIVATION_CASES + OPTION_CASES
    assert len({p.id for p in params}) == len(params) == 3 * 21 + 4 * len(OPTIONS) + 6
    for param in params:
        assert Case.parse(CELL, param.id) == param.values[0], param.id


def gate_values(case, zState) -> dict:
    """{gate letter: [T, N, D·H]}: zState holds each direction's activated gates in the
    descriptor's gate order (SPEC section 5), the forward block first."""
    blocks = zState.reshape(case.T, case.N, case.D, case.G, case.H)
    return {g: blocks[:, :, :, k].reshape(case.T, case.N, case.DH)
            for k, g in enumerate(case.gates)}


def previous_cells(case, c, initCell) -> np.ndarray:
    """cp[t]: the cell of the step processed before t (initCell, or zeros, at the first)."""
    c0 = np.zeros((case.N, case.DH)) if initCell is None else initCell.reshape(case.N, case.DH)
    cp = np.empty_like(c)
    reversed_ = (False, True) if case.bidirectional else (case.reverse,)
    for d, reverse in enumerate(reversed_):
        cols = slice(d * case.H, (d + 1) * case.H)
        first, rest, before = (-1, slice(0, -1), slice(1, None)) if reverse else (
            0, slice(1, None), slice(0, -1))
        cp[first, :, cols] = c0[:, cols]
        cp[rest, :, cols] = c[before, :, cols]
    return cp


@pytest.mark.parametrize("case", ACTIVATION_CASES + OPTION_CASES)
def test_forward_matches_reference(case, rng):
    x = make_inputs(case, rng, scale=scale_for(case, default=0.8))
    out = forward(case, x)  # [h, c, zState]: count, shapes and dtypes checked
    assert_all_close(out, reference(case, x), "float64", case.id)
    # The cell update from the returned gates (a few roundings, well inside the bound).
    a = gate_values(case, out["zState"])
    c = a["f"] * previous_cells(case, out["c"], x.get("initCell")) + a["i"] * a["z"]
    assert_close(out["c"], c, "activation", f"{case.id} c")
    h = a["o"] * numpy_rnn.activation(case.activation("activation"), out["c"])
    assert_close(out["h"], h, "activation", f"{case.id} h")


@pytest.mark.parametrize("case", [
    Case(CELL, activations={slot: "hardSigmoid"}, initState="[N,DH]", initCell="[N,DH]",
         peephole="[D4H]", T=4, N=3).param() for slot in SLOTS[CELL]])
def test_hard_sigmoid_saturates_both_ways(case, rng):
    """Pre-activations of the hardSigmoid slot beyond ±2.5, where it is exactly 0 or 1."""
    ((slot, _),) = case.activations
    x = make_inputs(case, rng, scale=2.0,
                    accept=lambda pre: np.any(pre[slot] > max(KINKS["hardSigmoid"]))
                    and np.any(pre[slot] < min(KINKS["hardSigmoid"])))
    out = forward(case, x)
    assert_all_close(out, reference(case, x), "float64", case.id)
    gates = gate_values(case, out["zState"])
    if slot == "activation":  # h = a_o ⊙ hardSigmoid(c): exactly 0 and exactly a_o
        saturated = [out["h"] == 0.0, out["h"] == gates["o"]]
    else:
        block = gates[SLOT_TOKENS[CELL][slot]]
        saturated = [block == 0.0, block == 1.0]
    assert all(np.any(s) for s in saturated), case.id


@pytest.mark.parametrize("training", [False, True], ids=["training=F", "training=T"])
@pytest.mark.parametrize("produceCell", [False, True], ids=["produceCell=F", "produceCell=T"])
@pytest.mark.parametrize("case", cases(CELL, "fwd-h0-c0-peephole-mask", "bi-h0-c0-peephole-mask"))
def test_returned_list_per_training_and_produce_cell(case, produceCell, training, rng):
    """SPEC section 5 (pinned): [h]; produceCell [h, c]; training [h, c, zState]."""
    x = make_inputs(case, rng)
    out = forward(case, x, training=training, produceCell=produceCell)
    assert list(out) == list(output_names(CELL, training, produceCell))
    assert len(out) == (3 if training else 2 if produceCell else 1)
    expected = reference(case, x)
    assert_all_close(out, {name: expected[name] for name in out}, "float64", case.id)


def test_unknown_dimensions_stay_unknown_until_run(rng):
    """Placeholders with None for T and N: symbolic outputs keep None there."""
    case = Case(CELL, "bi", T=4, I=4, H=3)
    x = make_inputs(case, rng)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=(None, None, case.I) if k == "source" else v.shape,
                           dataType=rg.float64) for k, v in x.items()}
    outputs = g.LSTM(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                     descriptor=case.descriptor(training=True))
    assert [t.shape for t in outputs] == [(None, None, case.DH), (None, None, case.DH),
                                          (None, None, case.DH * case.G)]
    result = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outputs)
    out = dict(zip(("h", "c", "zState"), (result[t] for t in outputs)))
    assert_all_close(out, reference(case, x), "float64", case.id)


def test_bidirectional_ignores_reverse(rng):
    case = Case(CELL, "reverse+bi", initState="[N,DH]", initCell="[N,DH]", peephole="[2,4H]",
                mask="[T,N,DH]")
    x = make_inputs(case, rng)
    assert_all_close(forward(case, x), forward(case.but(direction="bi"), x), "identical")


def permute_gates(array, axis, H, order):
    """Re-order the gate blocks (of H) of ``array`` along ``axis`` by ``order``, in each
    direction's group of blocks."""
    blocks = np.split(array, array.shape[axis] // H, axis=axis)
    return np.concatenate([blocks[start + k] for start in range(0, len(blocks), len(order))
                           for k in order], axis=axis)


@pytest.mark.parametrize("case", cases(CELL, "fwd-h0-c0-peephole", "bi-h0-c0-peephole"))
def test_forget_gate_last_is_the_order_i_z_f_o(case, rng):
    """SPEC section 3 (pinned): [i,f,z,o] weights re-ordered to [i,z,f,o] with
    forgetGateLast give the same h and c, and zState comes back in [i,z,f,o] order."""
    last = case.but(forgetGateLast=True)
    order = [case.gates.index(g) for g in last.gates]
    x = make_inputs(case, rng)
    axes = {"recurrentWeight": -2, "inputWeight": 0, "bias": 0, "peephole": 0}
    y = x | {k: permute_gates(x[k], axis, case.H, order) for k, axis in axes.items()}
    default, permuted = forward(case, x), forward(last, y)
    default["zState"] = permute_gates(default["zState"], -1, case.H, order)
    assert_all_close(permuted, default, "float64", case.id)


@pytest.mark.parametrize("implementation", ["rnngraph", "reference"])
def test_one_step_by_hand(implementation, rng):
    """SPEC section 5 written out: masked state, peephole on all four gates."""
    case = Case(CELL, initState="[N,DH]", initCell="[N,DH]", peephole="[D4H]",
                mask="[T,N,DH]", T=1)
    x = make_inputs(case, rng)
    cp = x["initCell"]
    pre = (x["source"][0] @ x["inputWeight"].T + x["bias"]
           + (x["initState"] * x["mask"][0]) @ x["recurrentWeight"].T
           + x["peephole"] * np.concatenate([cp] * case.G, axis=1))
    a = dict(zip(case.gates, np.split(pre, case.G, axis=1)))
    a = {g: np.tanh(v) if g == "z" else 1 / (1 + np.exp(-v)) for g, v in a.items()}
    c = a["f"] * cp + a["i"] * a["z"]
    expected = {"h": (a["o"] * np.tanh(c))[None], "c": c[None],
                "zState": np.concatenate([a[g] for g in case.gates], axis=1)[None]}
    out = forward(case, x) if implementation == "rnngraph" else reference(case, x)
    assert_all_close(out, expected, "float64", implementation)


@pytest.mark.parametrize("case", cases(CELL, "fwd-h0-c0-peephole-mask", "bi-h0-c0-peephole-mask"))
def test_absent_inputs_mean_zeros_or_ones(case, rng):
    """An omitted optional is zeros (bias, states, peephole) or ones (mask); without W the
    source is the projected input x·Wᵀ itself."""
    x = make_inputs(case, rng)
    full = x | {"mask": np.ones_like(x["mask"])}
    expected = forward(case, full)
    assert_all_close(forward(case.but(mask=None), {k: v for k, v in full.items() if k != "mask"}),
                     expected, "identical", "no mask")
    for label in ("bias", "initState", "initCell", "peephole"):
        zeros = forward(case, full | {label: np.zeros_like(x[label])})
        absent = forward(case.but(**{label: False if label == "bias" else None}),
                         {k: v for k, v in full.items() if k != label})
        assert_all_close(absent, zeros, "identical", f"no {label}")
        assert np.any(zeros["h"] != expected["h"]), label  # the input mattered
    projected = {k: v for k, v in full.items() if k != "inputWeight"}
    projected["source"] = x["source"] @ x["inputWeight"].T
    assert_all_close(forward(case.but(inputWeight=False), projected), expected, "float64", "no W")


@pytest.mark.parametrize("case", cases(CELL, "fwd-h0-c0-peephole-mask[T,1,DH]",
                                       "bi-h0-c0-peephole-mask[T,1,DH]"))
def test_equivalent_layouts_give_identical_results(case, rng):
    """[1,N,DH] states = [N,DH]; bidirectional peephole [2,4H] = [8H]; a broadcast mask =
    its explicit [T,N,DH] broadcast."""
    x = make_inputs(case, rng)
    expected = forward(case, x)
    full_mask = np.ascontiguousarray(np.broadcast_to(x["mask"], (case.T, case.N, case.DH)))
    variants = {"states": (case.but(initState="[1,N,DH]", initCell="[1,N,DH]"),
                           {"initState": x["initState"][None], "initCell": x["initCell"][None]}),
                "mask": (case.but(mask="[T,N,DH]"), {"mask": full_mask})}
    if case.bidirectional:
        variants["peephole"] = (case.but(peephole="[2,4H]"),
                                {"peephole": x["peephole"].reshape(2, -1)})
    for what, (variant, change) in variants.items():
        assert_all_close(forward(variant, x | change), expected, "identical", what)


def test_descriptor_changes_after_build_do_not_matter(rng):
    case = Case(CELL, initState="[N,DH]", initCell="[N,DH]")
    x = make_inputs(case, rng)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64) for k, v in x.items()}
    desc = rg.LSTMDescriptor(produceCell=True)
    outputs = g.LSTM(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                     descriptor=desc)
    desc.forgetGateLast, desc.activation, desc.training = True, rg.RNNActivation.relu, True
    assert len(outputs) == 2
    result = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outputs)
    expected = reference(case, x)
    assert_all_close(dict(zip("hc", (result[t] for t in outputs))),
                     {"h": expected["h"], "c": expected["c"]}, "float64")


FLOAT32_CASES = [Case(CELL, direction, activations, initState="[N,DH]", initCell="[N,DH]",
                      peephole="[D4H]", mask="[T,N,DH]", T=6, N=3, I=4, H=4).param()
                 for direction, activations in itertools.product(
                     ("fwd", "reverse", "bi"), ({}, {"z": "relu", "o": "hardSigmoid"}))]


@pytest.mark.parametrize("case", FLOAT32_CASES)
def test_float32_close_to_float64(case, rng):
    """The same (float32-representable) inputs in both dtypes, 1e-4 from kinks."""
    x32, x64 = float32_and_float64(case, rng, scale=0.5, margin=1e-4)
    out32, out64 = forward(case.but(dtype="float32"), x32), forward(case, x64)
    assert_all_close(out32, out64, "float32_forward", case.id)
    assert np.any(out32["h"] != out64["h"])  # really computed in float32


@pytest.mark.parametrize("threads", [1, 2])
def test_bidirectional_is_two_independent_directions(threads, rng):
    """A medium shape, 1 and 2 threads: each half of h, c and zState is a unidirectional op
    on that direction's blocks (SPEC section 1 layouts)."""
    case = Case(CELL, "bi", initState="[N,DH]", initCell="[N,DH]", peephole="[2,4H]",
                mask="[T,N,DH]", T=12, N=16, I=24, H=32)
    x = make_inputs(case, rng, scale=0.5, weight_scale=0.8 / np.sqrt(case.H))
    with blas_threads(threads):
        both = forward(case, x)
        for d in (0, 1):
            half, half_x = one_direction(case, x, d)
            H, GH = case.H, case.G * case.H
            columns = {"h": slice(d * H, (d + 1) * H), "c": slice(d * H, (d + 1) * H),
                       "zState": slice(d * GH, (d + 1) * GH)}
            assert_all_close({k: v[..., columns[k]] for k, v in both.items()},
                             forward(half, half_x), "float64", half.direction)
