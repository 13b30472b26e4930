"""Weights held as graph constants are packed once, at the first run, and the packed copy
serves every later run. Those runs must give what the same op gives with its weights fed as
placeholders, and what the NumPy reference gives: for every cell, direction, with and without
inputWeight, through both input-projection paths (packed panels up to 256 rows of x, the
BLAS above) and on one and two threads."""

import numpy as np
import pytest

import rnngraph as rg
from rnngraph._native import core
from toolkit import (
    CELLS,
    Case,
    assert_all_close,
    assert_close,
    blas_threads,
    draw_inputs,
    float32_and_float64,
    forward,
    gradients,
    reference,
    signals,
)
from toolkit.paths import SPLITS, forced_paths

WEIGHTS = ("recurrentWeight", "inputWeight")


def constant_weights_graph(case, x, descriptor):
    """The op of ``case`` with its weights as graph constants and the other inputs as
    placeholders; returns (graph, tensors by label, the op's outputs)."""
    g = rg.Graph()
    dtype = rg.float64 if x["source"].dtype == np.float64 else rg.float32
    tensors = {k: g.constant(v, name=k) if k in WEIGHTS
               else g.placeholder(shape=v.shape, dataType=dtype, name=k) for k, v in x.items()}
    inputs = {k: v for k, v in tensors.items() if k != "source"}
    outputs = getattr(g, case.cell)(tensors["source"], **inputs, descriptor=descriptor)
    return g, tensors, outputs


def placeholder_feeds(tensors, x):
    return {tensor: x[k] for k, tensor in tensors.items() if k not in WEIGHTS}


def forward_with_constant_weights(case, x, runs=2, training=False):
    """h of the op with constant weights, once per run."""
    g, tensors, outputs = constant_weights_graph(case, x, case.descriptor(training=training))
    feeds = placeholder_feeds(tensors, x)
    return [g.run(feeds=feeds, targetTensors=outputs)[outputs[0]] for _ in range(runs)]


def _states(cell, **sizes):
    """The case with its initial states given (non-zero, so R acts at step 0 too)."""
    return Case(cell, initState="[N,DH]", initCell="[N,DH]" if cell == "LSTM" else None, **sizes)


# cell, case id (direction and flags), training
KINDS = [("singleGateRNN", "fwd", False), ("singleGateRNN", "bi", False), ("LSTM", "fwd", False),
         ("LSTM", "reverse-forgetGateLast", False), ("LSTM", "bi", False),
         ("GRU", "fwd", False), ("GRU", "bi-resetAfter", False),
         ("GRU", "fwd-resetAfter-flipZ", True)]
# T, N, I, H: few rows (packed projection), more than 256 rows (BLAS projection), a hidden
# size that leaves the packed panels partly padding
SHAPES = [(3, 2, 5, 7), (40, 8, 6, 5), (4, 3, 9, 37)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{}-N{}-I{}-H{}".format(*s))
@pytest.mark.parametrize("cell,text,training", KINDS,
                         ids=[f"{c}-{t}" + "-training" * tr for c, t, tr in KINDS])
@pytest.mark.parametrize("inputWeight", [True, False], ids=["W", "noW"])
def test_constant_weights_match_fed_weights_and_reference(cell, text, training, shape,
                                                          inputWeight, rng):
    T, N, I, H = shape
    case = Case.parse(cell, text).but(T=T, N=N, I=I, H=H).with_all_inputs(inputWeight=inputWeight)
    x = draw_inputs(case, rng)
    first, second = forward_with_constant_weights(case, x, training=training)
    assert_close(first, second, "identical", "the cached packing, second run")
    assert_close(first, forward(case, x)["h"], "float64", "constant against fed weights")
    assert_close(first, reference(case, x)["h"], "float64_medium", "against the reference")


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_constant_weights_in_float32_against_float64(cell, rng):
    case = _states(cell, T=6, N=3, I=20, H=40)
    x32, x64 = float32_and_float64(case, rng, scale=0.3)
    (h32, _), (h64, _) = (forward_with_constant_weights(case, x) for x in (x32, x64))
    assert h32.dtype == np.float32
    assert_close(h32, h64, "float32_forward", cell)


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("N", [1, 20])
def test_constant_weights_on_two_threads(cell, N, rng):
    # Large enough for a threaded input projection and for threads sharing each step.
    case = _states(cell, T=5, N=N, I=160, H=96)
    x = draw_inputs(case, rng, scale=0.3)
    results = []
    for n in (1, 2):
        with blas_threads(n):
            results.append(forward_with_constant_weights(case, x, runs=1)[0])
    assert_close(results[1], results[0], "float64", "2 threads against 1")
    assert_close(results[1], reference(case, x)["h"], "float64_medium", "against the reference")


# One batch row and a hidden size large enough for a team: the team runs each step by units,
# and with one step (T·N = 1) computes the packed input projection in it (team_loops.hpp).
ONE_ROW_TEAMS = [("LSTM", "fwd", 512), ("GRU", "fwd-resetAfter", 384), ("singleGateRNN", "fwd", 640)]


@pytest.mark.parametrize("T", [1, 4])
@pytest.mark.parametrize("training", [False, True], ids=["infer", "training"])
@pytest.mark.parametrize("cell,text,H", ONE_ROW_TEAMS, ids=[c for c, _, _ in ONE_ROW_TEAMS])
def test_one_row_team_with_constant_weights(cell, text, H, training, T, rng):
    case = Case.parse(cell, text).but(T=T, N=1, I=48, H=H).with_all_inputs()
    x = draw_inputs(case, rng, scale=0.3)
    runs = {}
    for n in (1, 2, 3, 7):
        with blas_threads(n):
            runs[n] = forward_with_constant_weights(case, x, runs=2, training=training)
    for n, (first, second) in runs.items():
        assert np.array_equal(first, runs[1][0]), f"{n} threads against 1"
        assert np.array_equal(second, first), f"{n} threads, the second run"
    assert_close(runs[1][0], reference(case, x)["h"], "float64_medium", "against the reference")


# Calls with the same packed weights go on alternating the way the steps sweep R's panels
# where the call before left off (Direction::steps_before): after a call of an odd number of
# steps the next starts from the other end. H = 72 in float32: 5 panels a gate, so the
# three-panel tile of one row leaves panels at the end it sweeps towards where the gates add
# up to no multiple of 3 (the LSTM's 20, the single-gate RNN's 5). The reset-before GRU never
# sweeps from the back (its dependent product); it stays as the control.
PARITY_CASES = [("singleGateRNN", "fwd"), ("LSTM", "bi"), ("LSTM", "reverse"),
                ("GRU", "fwd-resetAfter"), ("GRU", "bi-resetAfter"), ("GRU", "fwd")]


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("N", [1, 5, 20])
@pytest.mark.parametrize("T", [1, 3])
@pytest.mark.parametrize("cell,text", PARITY_CASES, ids=[f"{c}-{t}" for c, t in PARITY_CASES])
def test_calls_from_either_end_of_the_packed_weights_give_the_same_bits(cell, text, T, N, split,
                                                                        rng):
    case = Case.parse(cell, text).but(T=T, N=N, I=24, H=72).with_all_inputs()
    x32, x64 = float32_and_float64(case, rng, scale=0.3)
    with blas_threads(2), forced_paths(split=split):
        runs = forward_with_constant_weights(case, x32, runs=3)
    with blas_threads(2), forced_paths(split=split, sweep="ascending"):
        (ascending,) = forward_with_constant_weights(case, x32, runs=1)
    for i, h in enumerate(runs):
        np.testing.assert_array_equal(h, ascending, err_msg=f"run {i} against every step ascending")
    assert_close(runs[1], reference(case, x64)["h"], "float32_forward", "against the reference")


@pytest.mark.parametrize("N", list(range(1, 14)))
def test_every_row_count_of_the_packed_step_product_in_float32(N, rng):
    # The packed product takes few rows three panels at a time, up to six two at a time
    # (AVX-512), more in tiles of up to 12: each count, against the float64 reference.
    case = _states("LSTM", T=4, N=N, I=24, H=80)
    x32, x64 = float32_and_float64(case, rng, scale=0.3)
    expected = reference(case, x64)["h"]
    for n in (1, 2):
        with blas_threads(n):
            h = forward_with_constant_weights(case, x32, runs=1)[0]
        assert_close(h, expected, "float32_forward", f"{n} threads")


def test_gradient_op_with_constant_weights(rng):
    case = _states("LSTM", T=4, N=3, I=5, H=6, signal="dy")
    x = draw_inputs(case, rng)
    g, tensors, (h, c, z) = constant_weights_graph(case, x, case.descriptor(training=True))
    sig = signals(case, rng)
    dy = g.placeholder(shape=h.shape, dataType=rg.float64, name="dy")
    inputs = {k: v for k, v in tensors.items() if k != "source"}
    grads = g.LSTMGradients(tensors["source"], **inputs, sourceGradient=dy, zState=z,
                            cellOutputFwd=c, descriptor=case.descriptor())
    result = g.run(feeds=placeholder_feeds(tensors, x) | {dy: sig.dy}, targetTensors=grads)
    expected = gradients(case, x, sig)
    assert_all_close(dict(zip(case.returned, (result[t] for t in grads))), expected, "float64",
                     "constant against fed weights")


def test_packed_weights_of_another_shape_are_refused(rng):
    R = rng.standard_normal((8, 2))
    W = rng.standard_normal((8, 3))
    lstm = core.LSTMOptions()
    packed = core.pack_forward_weights(lstm, R, W)
    source = rng.standard_normal((2, 1, 3))
    h, _, _ = core.rnn_forward(lstm, {"source": source, "recurrentWeight": R, "inputWeight": W},
                               packed=packed)
    assert h.shape == (2, 1, 2)
    with pytest.raises(ValueError, match="LSTM: packed"):
        core.rnn_forward(lstm, {"source": rng.standard_normal((2, 1, 4)), "recurrentWeight": R,
                                "inputWeight": rng.standard_normal((8, 4))}, packed=packed)
    with pytest.raises(ValueError, match="GRU: packed"):
        core.rnn_forward(core.GRUOptions(), {"source": rng.standard_normal((2, 1, 3)),
                                             "recurrentWeight": rng.standard_normal((6, 2)),
                                             "inputWeight": rng.standard_normal((6, 3))},
                         packed=packed)
    with pytest.raises(ValueError, match="LSTM: packed"):
        core.rnn_forward(lstm, {"source": source.astype(np.float32),
                                "recurrentWeight": R.astype(np.float32),
                                "inputWeight": W.astype(np.float32)}, packed=packed)
    with pytest.raises(ValueError, match="LSTM: recurrentWeight"):
        core.pack_forward_weights(lstm, rng.standard_normal((8, 3)), W)
    with pytest.raises(TypeError, match="LSTM: recurrentWeight: expected dtype"):
        core.pack_forward_weights(lstm, R.astype(np.int64), W)
