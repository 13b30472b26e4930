"""singleGateRNN forward (SPEC.md sections 1-5) against the NumPy loop reference over every
combination of activation, direction, mask layout and optional input; hand-computed steps
that pin the formula for rnngraph and the reference alike; every broadcastable mask layout;
float32 against float64; bidirectional as two unidirectional ops.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import rnngraph as rg
from reference import numpy_rnn
from toolkit import (
    ACTIVATIONS,
    Case,
    assert_all_close,
    assert_close,
    blas_threads,
    float32_and_float64,
    forward,
    forward_op,
    make_inputs,
    one_direction,
    reference,
    reference_op,
    scale_for,
)

CELL = "singleGateRNN"
DIRECTIONS = ("fwd", "reverse", "bi", "reverse+bi")
# No mask, and fractional masks (values 0, 1 and in between: the mask is a multiplier) of
# the full layout and three broadcast ones.
MASKS = (None, "[T,N,DH]", "[1,N,DH]", "[N,1]", "[T,1,1]")
INIT_STATES = (None, "[N,DH]", "[1,N,DH]")

EVERY_COMBINATION = [
    Case(CELL, direction, {"activation": act}, inputWeight=w, bias=b, initState=h0, mask=mask,
         fractional_mask=mask is not None).param()
    for act, direction, mask, w, b, h0 in itertools.product(
        ACTIVATIONS, DIRECTIONS, MASKS, (True, False), (True, False), INIT_STATES)
]


def test_case_ids_spell_every_combination():
    """Each pytest id above spells its case: parsing it gives the case back, and no two
    cases share an id (so no combination is lost to a duplicate)."""
    ids = [param.id for param in EVERY_COMBINATION]
    assert len(set(ids)) == len(ids) == len(ACTIVATIONS) * 4 * 5 * 2 * 2 * 3
    for param in EVERY_COMBINATION:
        assert Case.parse(CELL, param.id) == param.values[0], param.id


@pytest.mark.parametrize("case", EVERY_COMBINATION)
def test_forward_matches_reference(case, rng):
    x = make_inputs(case, rng, scale=scale_for(case, default=0.8))
    out = forward(case, x)  # [h, zState]: count, shapes and dtypes checked
    assert_all_close(out, reference(case, x), "float64", case.id)
    # zState is the pre-activation: h = act(zState) exactly as SPEC.md section 2 defines act.
    assert_close(out["h"], numpy_rnn.activation(case.activation("activation"), out["zState"]),
                 "activation", case.id)


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_training_false_returns_h_only_and_the_same_h(activation, rng):
    case = Case(CELL, "bi", {"activation": activation}, initState="[N,DH]", mask="[T,N,DH]",
                fractional_mask=True)
    x = make_inputs(case, rng, scale=1.0)
    inference = forward(case, x, training=False)  # checks the list is [h]
    training = forward(case, x, training=True)  # [h, zState]
    assert list(inference) == ["h"] and list(training) == ["h", "zState"]
    assert_close(inference["h"], training["h"], "identical", activation)


def test_default_descriptor_is_relu_forward(rng):
    """descriptor=None means SingleGateRNNDescriptor(): relu, forward, [h] only."""
    case = Case(CELL, initState="[N,DH]")
    x = make_inputs(case, rng, scale=1.0)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    outputs = g.singleGateRNN(ph["source"], **{k: v for k, v in ph.items() if k != "source"})
    assert len(outputs) == 1
    h = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outputs)[outputs[0]]
    expected = numpy_rnn.single_gate_rnn(x["source"], x["recurrentWeight"], x["inputWeight"],
                                         x["bias"], x["initState"])["h"]
    assert np.any(expected == 0) and np.any(expected > 0)  # relu really clipped something
    assert_close(h, expected, "float64")


def test_reverse_stores_state_from_x_t_at_out_t():
    """SPEC.md section 4 (pinned): reverse starts at t = T-1 from initState; out[0] is the
    final state. With activation none and R = identity, out[t] = x[t] + out[t+1]: a running
    sum from the end."""
    T = 5
    x = {"source": np.arange(1.0, T + 1).reshape(T, 1, 1), "recurrentWeight": np.eye(1),
         "initState": np.array([[100.0]])}
    desc = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.none, reverse=True)
    h = forward_op(CELL, x, desc)["h"]
    assert_close(h[:, 0, 0], 100.0 + np.cumsum(x["source"][::-1, 0, 0])[::-1], "hand")


# --- one and two steps by hand: rnngraph and the reference against SPEC.md section 5 ------

def both_implementations(x, desc) -> dict:
    """{implementation: outputs} for rnngraph (training, so with zState) and the reference."""
    train = desc.copy()
    train.training = True
    return {"rnngraph": forward_op(CELL, x, train), "reference": reference_op(CELL, x, desc)}


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_one_step_by_hand(activation, rng):
    case = Case(CELL, activations={"activation": activation}, initState="[N,DH]", T=1, N=3,
                I=4, H=6)
    x = make_inputs(case, rng, scale=1.0)
    z = x["source"][0] @ x["inputWeight"].T + x["bias"] + x["initState"] @ x["recurrentWeight"].T
    for name, out in both_implementations(x, case.descriptor()).items():
        assert_close(out["zState"][0], z, "float64", name)
        assert_close(out["h"][0], numpy_rnn.activation(activation, z), "float64", name)


def test_two_steps_with_a_mask_by_hand(rng):
    """No inputWeight (the source is x'), a [T, N, 1] mask of 1, 0 and 0.5."""
    H = 6
    x = {"source": rng.standard_normal((2, 3, H)), "recurrentWeight": rng.standard_normal((H, H)),
         "bias": rng.standard_normal(H), "initState": rng.standard_normal((3, H)),
         "mask": np.array([[[1.0]] * 3, [[0.0], [1.0], [0.5]]])}
    b, R, m = x["bias"], x["recurrentWeight"], x["mask"]
    h_0 = np.tanh(x["source"][0] + b + (x["initState"] * m[0]) @ R.T)
    h_1 = np.tanh(x["source"][1] + b + (h_0 * m[1]) @ R.T)
    desc = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh)
    for name, out in both_implementations(x, desc).items():
        assert_close(out["h"], np.stack([h_0, h_1]), "float64", name)


def test_zero_mask_leaves_only_the_input_projection(rng):
    case = Case(CELL, activations={"activation": "tanh"}, initState="[N,DH]", mask="[T,N,DH]")
    x = make_inputs(case, rng)
    x["mask"] = np.zeros_like(x["mask"])
    projected = x["source"] @ x["inputWeight"].T + x["bias"]
    for name, out in both_implementations(x, case.descriptor()).items():
        assert_close(out["zState"], projected, "float64", name)
        assert_close(out["h"], np.tanh(projected), "float64", name)


# --- masks of every broadcastable layout ---------------------------------------------------

# SPEC.md section 1: the mask is anything broadcastable to [T, N, D·H], a scalar included.
MASK_LAYOUTS = ("[]", "[DH]", "[1]", "[T,1,1]", "[1,1,DH]", "[N,DH]", "[N,1]", "[T,N,1]")
MASK_LAYOUT_CASES = [
    Case(CELL, direction, {"activation": "tanh"}, initState="[N,DH]", mask=layout,
         fractional_mask=True).param()
    for layout in MASK_LAYOUTS for direction in ("fwd", "bi")
]


@pytest.mark.parametrize("case", MASK_LAYOUT_CASES)
def test_every_broadcastable_mask_layout(case, rng):
    x = make_inputs(case, rng)
    out = forward(case, x)
    assert_all_close(out, reference(case, x), "float64", case.id)
    # The same as the mask broadcast by hand to [T, N, D·H].
    full = np.ascontiguousarray(np.broadcast_to(x["mask"], (case.T, case.N, case.DH)))
    assert_all_close(forward(case, {**x, "mask": full}), out, "identical", case.id)


# --- float32 against float64 -----------------------------------------------------------------

FLOAT32_CASES = [
    Case(CELL, direction, {"activation": act}, initState="[N,DH]", mask="[T,N,DH]", T=10, N=4,
         I=8, H=16).param()
    for act in ACTIVATIONS for direction in ("fwd", "reverse", "bi")
]
# float32 noise moves pre-activations by ~1e-6: keep 1e-4 from relu/hardSigmoid kinks so no
# derivative flips between the dtypes; recurrent weights contract (spectral radius < 1).
FLOAT32_INPUTS = {"scale": 0.5, "weight_scale": 0.5 / np.sqrt(16), "margin": 1e-4}


@pytest.mark.parametrize("case", FLOAT32_CASES)
def test_float32_close_to_float64(case, rng):
    x32, x64 = float32_and_float64(case, rng, **FLOAT32_INPUTS)
    out32, out64 = forward(case.but(dtype="float32"), x32), forward(case, x64)
    assert_all_close(out32, out64, "float32_forward", case.id)
    assert np.any(out32["h"] != out64["h"])  # really computed in float32


# --- bidirectional = a forward and a reverse unidirectional op side by side -----------------

@pytest.mark.parametrize("threads", [1, 2])
def test_bidirectional_is_two_independent_directions(threads, rng):
    """SPEC.md section 1 layouts, at a medium shape, with 1 and 2 threads (the directions
    may run concurrently): each half of h and zState is a unidirectional op on its blocks."""
    case = Case(CELL, "bi", {"activation": "tanh"}, initState="[N,DH]", mask="[T,N,DH]", T=12,
                N=16, I=24, H=32)
    x = make_inputs(case, rng, scale=0.5, weight_scale=0.8 / np.sqrt(32))
    with blas_threads(threads):
        both = forward(case, x)
        for d in (0, 1):
            half, half_x = one_direction(case, x, d)
            columns = slice(d * case.H, (d + 1) * case.H)
            assert_all_close({k: v[..., columns] for k, v in both.items()},
                             forward(half, half_x), "float64", half.direction)
