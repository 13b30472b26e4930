"""Weights held as graph constants are packed once, at the first run, and the packed copy
serves every later run. Those runs must give what the same op gives with its weights fed as
placeholders, and what the NumPy reference gives: for every cell, direction, with and without
inputWeight, through both input-projection paths (packed panels up to 256 rows of x, the
BLAS above) and on one and two threads."""

import numpy as np
import pytest

import harness
import rnngraph as rg
from rnngraph._native import core

WEIGHTS = ("recurrentWeight", "inputWeight")


def forward_with_constant_weights(cell, arrays, desc, runs=2):
    """Build the op with its weights as constants; run it ``runs`` times (one result per run)."""
    g = rg.Graph()
    dtype = rg.float64 if arrays["source"].dtype == np.float64 else rg.float32
    tensors = {k: g.constant(v, name=k) if k in WEIGHTS
               else g.placeholder(shape=v.shape, dataType=dtype, name=k) for k, v in arrays.items()}
    source = tensors.pop("source")
    outputs = getattr(g, cell)(source, **tensors, descriptor=desc)
    tensors["source"] = source
    feeds = {tensors[k]: v for k, v in arrays.items() if k not in WEIGHTS}
    return [g.run(feeds=feeds, targetTensors=outputs)[outputs[0]] for _ in range(runs)]


# cell, descriptor properties
CASES = [
    ("singleGateRNN", {}),
    ("singleGateRNN", {"bidirectional": True}),
    ("LSTM", {}),
    ("LSTM", {"reverse": True, "forgetGateLast": True}),
    ("LSTM", {"bidirectional": True}),
    ("GRU", {"resetAfter": False}),
    ("GRU", {"resetAfter": True, "bidirectional": True}),
    ("GRU", {"resetAfter": True, "flipZ": True, "training": True}),
]
# T, N, I, H: few rows (packed projection), more than 256 rows (BLAS projection), a hidden
# size that leaves the packed panels partly padding
SHAPES = [(3, 2, 5, 7), (40, 8, 6, 5), (4, 3, 9, 37)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "T{}-N{}-I{}-H{}".format(*s))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0] + "-" + "-".join(sorted(c[1])))
@pytest.mark.parametrize("inputWeight", [True, False], ids=["W", "noW"])
def test_constant_weights_match_fed_weights_and_reference(case, shape, inputWeight):
    cell, props = case
    T, N, I, H = shape
    rng = np.random.default_rng(11)
    x = harness.make_inputs(cell, rng, T=T, N=N, I=I, H=H, bidirectional=props.get("bidirectional", False),
                            inputWeight=inputWeight, mask=True, peephole=True, secondaryBias=True)
    desc = harness.descriptor(cell, **props)
    first, second = forward_with_constant_weights(cell, x, desc)
    fed = harness.forward(cell, x, desc)["h"]
    reference = harness.reference_forward(cell, x, desc)["h"]
    np.testing.assert_array_equal(first, second)  # the cached packing gives the same result
    np.testing.assert_allclose(first, fed, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(first, reference, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_constant_weights_in_float32_against_float64(cell):
    rng = np.random.default_rng(3)
    x64 = harness.make_inputs(cell, rng, T=6, N=3, I=20, H=40, scale=0.3)
    x32 = {k: v.astype(np.float32) for k, v in x64.items()}
    desc = harness.descriptor(cell)
    (h32, _), (h64, _) = (forward_with_constant_weights(cell, x, desc) for x in (x32, x64))
    assert h32.dtype == np.float32
    np.testing.assert_allclose(h32, h64, rtol=0, atol=2e-6)  # float32 rounding over 40-term sums


@pytest.fixture
def threads():
    saved = rg.get_num_threads()
    yield
    rg.set_num_threads(saved)


@pytest.mark.parametrize("cell", ["singleGateRNN", "LSTM", "GRU"])
@pytest.mark.parametrize("N", [1, 20])
def test_constant_weights_on_two_threads(cell, N, threads):
    # Large enough for a threaded input projection and for threads sharing each step.
    rng = np.random.default_rng(5)
    x = harness.make_inputs(cell, rng, T=5, N=N, I=160, H=96, scale=0.3)
    desc = harness.descriptor(cell)
    results = []
    for n in (1, 2):
        rg.set_num_threads(n)
        results.append(forward_with_constant_weights(cell, x, desc, runs=1)[0])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[1], harness.reference_forward(cell, x, desc)["h"],
                               rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("N", list(range(1, 14)))
def test_every_row_count_of_the_packed_step_product_in_float32(N, threads):
    # The packed product takes few rows three panels at a time, up to six two at a time
    # (AVX-512), more in tiles of up to 12: each count, against the float64 reference.
    rng = np.random.default_rng(100 + N)
    x = harness.make_inputs("LSTM", rng, T=4, N=N, I=24, H=80, scale=0.3)
    desc = harness.descriptor("LSTM")
    reference = harness.reference_forward("LSTM", x, desc)["h"]
    x32 = {k: v.astype(np.float32) for k, v in x.items()}
    for n in (1, 2):
        rg.set_num_threads(n)
        h = forward_with_constant_weights("LSTM", x32, desc, runs=1)[0]
        np.testing.assert_allclose(h, reference, rtol=0, atol=2e-6)


def test_gradient_op_with_constant_weights():
    cell = "LSTM"
    rng = np.random.default_rng(8)
    x = harness.make_inputs(cell, rng, T=4, N=3, I=5, H=6)
    g = rg.Graph()
    tensors = {k: g.constant(v, name=k) if k in WEIGHTS
               else g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    desc = harness.descriptor(cell, training=True)
    source = tensors.pop("source")
    h, c, z = g.LSTM(source, **tensors, descriptor=desc)
    dy = rng.standard_normal(h.shape)
    dy_t = g.placeholder(shape=dy.shape, dataType=rg.float64)
    grads = g.LSTMGradients(source, **tensors, sourceGradient=dy_t, zState=z, cellOutputFwd=c,
                            descriptor=desc)
    feeds = {source: x["source"], dy_t: dy}
    feeds.update({tensors[k]: v for k, v in x.items() if k not in WEIGHTS and k != "source"})
    result = g.run(feeds=feeds, targetTensors=grads)
    expected = harness.gradients(cell, x, desc, dy)
    for label, tensor in zip(grads[0].op.attrs["returned"], grads):
        np.testing.assert_allclose(result[tensor], expected[label], rtol=1e-12, atol=1e-12, err_msg=label)


def test_packed_weights_of_another_shape_are_refused():
    rng = np.random.default_rng(1)
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
