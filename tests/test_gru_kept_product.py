"""A resetAfter GRU's internal ``recurrentProduct``: hm·R_oᵀ + b2 of every step (SPEC.md
section 5), [T, N, D·H] laid out as h. A training forward op keeps it as it goes
(``rnn_forward(..., recurrent_product=True)``), and its gradient op reads it instead of
computing the product [T·N, H] x [H, H] again.

Checked: the kept product against NumPy for every work split, direction, mask and dtype;
gradients with it against gradients without it; the Graph's wiring (kept only when the
gradient op reads exactly its forward op's computation, the caller's lists unchanged);
Graph.gradients; bit-identity across thread counts; refusals of bad use.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rnngraph as rg
from rnngraph._native import core
from toolkit import assert_all_close, assert_close, blas_threads
from toolkit.paths import SPLITS, forced_paths

DIRECTIONS = ("fwd", "reverse", "bi")


def _inputs(rng, direction: str, dtype, T=6, N=5, I=7, H=9, mask=True, initState=True):
    """Dense core inputs of a resetAfter GRU with every optional input (mask 0/1), or
    without the mask or initState."""
    D = 2 if direction == "bi" else 1
    x = {
        "source": rng.standard_normal((T, N, I)),
        "recurrentWeight": rng.standard_normal((2, 3 * H, H) if D == 2 else (3 * H, H)) * 0.4,
        "inputWeight": rng.standard_normal((D * 3 * H, I)) * 0.4,
        "bias": rng.standard_normal(D * 3 * H) * 0.3,
        "initState": rng.standard_normal((N, D * H)) * 0.5 if initState else None,
        "mask": (rng.random((T, N, D * H)) > 0.3).astype(float) if mask else None,
        "secondaryBias": rng.standard_normal(D * H) * 0.3,
    }
    return {k: None if v is None else v.astype(dtype) for k, v in x.items()}


def _options(direction: str, **flags):
    return core.GRUOptions(resetAfter=True, bidirectional=direction == "bi",
                           reverse=direction == "reverse", **flags)


def _numpy_product(x: dict, h: np.ndarray, direction: str) -> np.ndarray:
    """hm·R_oᵀ + b2 for every step, from the forward's h: hm[t] = (the state before step t
    in processing order) ⊙ mask[t]; R_o is the last H rows of each direction's R (the
    candidate is last in both gate orders)."""
    T, N, DH = h.shape
    D = 2 if direction == "bi" else 1
    H = DH // D
    R = x["recurrentWeight"].reshape(D, 3 * H, H).astype(np.float64)
    out = np.empty((T, N, DH))
    for d in range(D):
        cols = slice(d * H, (d + 1) * H)
        backwards = d == 1 or direction == "reverse"
        order = range(T - 1, -1, -1) if backwards else range(T)
        state = (np.zeros((N, H)) if x["initState"] is None
                 else x["initState"][:, cols].astype(np.float64))
        for t in order:
            hm = state * (1 if x["mask"] is None else x["mask"][t, :, cols])
            out[t, :, cols] = hm @ R[d, 2 * H:].T + x["secondaryBias"][cols]
            state = h[t, :, cols].astype(np.float64)
    return out


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kept_product_matches_numpy_and_gives_the_same_gradients(split, direction, dtype, rng):
    x = _inputs(rng, direction, dtype)
    options = _options(direction)
    with forced_paths(split=split):
        h, c, z, product = core.rnn_forward(options, x, training=True, recurrent_product=True)
        assert c is None and product.shape == h.shape and product.dtype == dtype
        assert product.flags.c_contiguous
        tolerance = "float64" if dtype == np.float64 else "float32_forward"
        assert_close(product, _numpy_product(x, h, direction), tolerance, "recurrentProduct")
        # the forward's own outputs are those of a call that keeps nothing
        h2, _, z2 = core.rnn_forward(options, x, training=True)
        assert np.array_equal(h, h2) and np.array_equal(z, z2)
        given = {**x, "sourceGradient": rng.standard_normal(h.shape).astype(dtype),
                 "stateGradient": rng.standard_normal(x["initState"].shape).astype(dtype),
                 "zState": z, "outputFwd": h}
        computed = core.rnn_gradients(options, given)
        kept = core.rnn_gradients(options, {**given, "recurrentProduct": product})
    assert_all_close(kept, computed,
                     "float64" if dtype == np.float64 else "float32_gradients", direction)


@pytest.mark.parametrize("T, N, mask, initState", [
    (0, 4, True, True), (5, 0, True, True), (0, 0, False, False), (5, 4, False, False),
    (1, 1, False, True)])
def test_empty_sequences_and_absent_inputs(T, N, mask, initState, rng):
    """T = 0 or N = 0: an empty product; without initState hm starts at zeros, without a
    mask hm = hp (SPEC.md section 5)."""
    for direction in DIRECTIONS:
        x = _inputs(rng, direction, np.float64, T=T, N=N, mask=mask, initState=initState)
        options = _options(direction)
        h, _, z, product = core.rnn_forward(options, x, training=True, recurrent_product=True)
        assert product.shape == h.shape == (T, N, h.shape[2])
        assert_close(product, _numpy_product(x, h, direction), "float64", direction)
        given = {**x, "sourceGradient": rng.standard_normal(h.shape), "zState": z,
                 "outputFwd": h}
        assert_all_close(core.rnn_gradients(options, {**given, "recurrentProduct": product}),
                         core.rnn_gradients(options, given), "float64", direction)


def test_the_gradient_op_reads_the_kept_product(rng):
    """Not merely equal: a product other than hm·R_oᵀ + b2 changes exactly the gradients
    that read it (dA_r = dA_o ⊙ q_o, the chain rule of SPEC.md section 5's o), so the kernel
    used the one given."""
    x = _inputs(rng, "fwd", np.float64)
    options = _options("fwd")
    h, _, z, product = core.rnn_forward(options, x, training=True, recurrent_product=True)
    given = {**x, "sourceGradient": rng.standard_normal(h.shape), "zState": z, "outputFwd": h}
    kept = core.rnn_gradients(options, {**given, "recurrentProduct": product})
    other = core.rnn_gradients(options, {**given, "recurrentProduct": product + 1.0})
    for label in ("source", "recurrentWeight", "bias"):
        assert not np.allclose(kept[label], other[label]), label


@pytest.mark.parametrize("cell, options", [
    ("GRU reset-before", core.GRUOptions()),
    ("LSTM", core.LSTMOptions()),
    ("singleGateRNN", core.SingleGateRNNOptions()),
])
def test_only_a_training_reset_after_gru_keeps_a_product(cell, options, rng):
    T, N, I, H = 3, 2, 4, 5
    x = {"source": rng.standard_normal((T, N, I)),
         "recurrentWeight": rng.standard_normal((options.gates * H, H)),
         "inputWeight": rng.standard_normal((options.gates * H, I))}
    assert core.rnn_forward(options, x, training=True, recurrent_product=True)[-1] is None
    assert core.rnn_forward(_options("fwd"), x | {
        "recurrentWeight": rng.standard_normal((3 * H, H)),
        "inputWeight": rng.standard_normal((3 * H, I))}, recurrent_product=True)[-1] is None
    result = core.rnn_forward(_options("fwd"), x | {
        "recurrentWeight": rng.standard_normal((3 * H, H)),
        "inputWeight": rng.standard_normal((3 * H, I))}, training=True, final_states=True,
        recurrent_product=True)
    assert len(result) == 6 and result[-1].shape == (T, N, H)


def test_bad_products_are_refused(rng):
    x = _inputs(rng, "fwd", np.float64, T=4, N=3, H=5)
    options = _options("fwd")
    h, _, z, product = core.rnn_forward(options, x, training=True, recurrent_product=True)
    given = {**x, "sourceGradient": np.ones_like(h), "zState": z, "outputFwd": h}
    with pytest.raises(ValueError, match="GRUGradients: recurrentProduct: kept by a resetAfter"):
        core.rnn_gradients(core.GRUOptions(), {**given, "recurrentProduct": product})
    with pytest.raises(ValueError, match="GRUGradients: recurrentProduct"):
        core.rnn_gradients(options, {**given, "recurrentProduct": product[:, :2]})
    with pytest.raises(TypeError, match="GRUGradients: recurrentProduct"):
        core.rnn_gradients(options, {**given, "recurrentProduct": product.astype(np.float32)})
    with pytest.raises(ValueError, match="unknown label 'recurrentProduct'"):
        core.rnn_gradients(core.LSTMOptions(), {"recurrentProduct": product})
    with pytest.raises(TypeError, match="GRU: recurrent_product"):
        core.rnn_forward(options, x, training=True, recurrent_product="yes")


# --- the Graph's wiring ------------------------------------------------------------------

def _wired(direction="fwd", *, resetAfter=True, outputFwd=None, gradient_inputs=None,
           dtype=rg.float64, T=5, N=3, I=4, H=6):
    """A training GRU on placeholders and its gradient op; ``outputFwd="placeholder"``: a
    placeholder given instead of the forward op's h; ``gradient_inputs``: labels given to the
    gradient op as placeholders of their own."""
    D = 2 if direction == "bi" else 1
    g = rg.Graph()
    shapes = {"source": (T, N, I), "recurrentWeight": (2, 3 * H, H) if D == 2 else (3 * H, H),
              "inputWeight": (D * 3 * H, I), "bias": (D * 3 * H,), "initState": (N, D * H),
              "mask": (T, N, D * H), "secondaryBias": (D * H,), "sourceGradient": (T, N, D * H)}
    ph = {k: g.placeholder(shape=s, dataType=dtype, name=k) for k, s in shapes.items()}
    descriptor = rg.GRUDescriptor(training=True, resetAfter=resetAfter,
                                  bidirectional=D == 2, reverse=direction == "reverse")
    inputs = {k: v for k, v in ph.items() if k not in ("source", "sourceGradient")}
    outs = g.GRU(ph["source"], **inputs, descriptor=descriptor)
    h, z = outs
    if outputFwd == "placeholder":
        outputFwd = g.placeholder(shape=h.shape, dataType=dtype, name="outputFwd")
        ph["outputFwd"] = outputFwd
    others = {k: g.placeholder(shape=shapes[k], dataType=dtype, name=f"other_{k}")
              for k in gradient_inputs or ()}
    grads = g.GRUGradients(ph["source"], **(inputs | others),
                           sourceGradient=ph["sourceGradient"], zState=z,
                           outputFwd=h if outputFwd is None else outputFwd,
                           descriptor=descriptor)
    return g, ph, outs, grads


def _feeds(ph: dict, rng) -> dict:
    feeds = {}
    for label, tensor in ph.items():
        value = rng.standard_normal(tensor.shape) * (0.4 if label != "source" else 1.0)
        if label == "mask":
            value = (rng.random(tensor.shape) > 0.3).astype(float)
        feeds[tensor] = value.astype(tensor.dataType.numpy)
    return feeds


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_a_wired_gradient_op_reads_its_forward_ops_product(direction, rng):
    g, ph, outs, grads = _wired(direction)
    product = grads[0].op.inputs.get("recurrentProduct")
    assert product is not None and product.op is outs[0].op
    assert product.shape == outs[0].shape
    assert len(outs) == 2  # the caller's list: the kept product stays internal
    feeds = _feeds(ph, rng)
    wired = g.run(feeds=feeds, targetTensors=[*outs, *grads])
    # the same gradient op fed the forward's outputs as arrays computes the product itself
    g2, ph2, _, grads2 = _wired(direction, outputFwd="placeholder")
    assert "recurrentProduct" not in grads2[0].op.inputs
    feeds2 = {ph2[k]: v for k, v in zip(ph, feeds.values())} | {ph2["outputFwd"]: wired[outs[0]]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (outputFwd not the forward op's: warned, as meant)
        alone = g2.run(feeds=feeds2, targetTensors=grads2)
    for a, b in zip(grads, grads2):
        assert_close(wired[a], alone[b], "float64", a.name)


def test_not_kept_for_another_computation():
    """Reset-before, outputFwd not the forward op's h, or an input that differs from the
    forward op's (warned): the gradient op computes the product from what it was given."""
    for kwargs in ({"resetAfter": False}, {"outputFwd": "placeholder"},
                   {"gradient_inputs": ["secondaryBias"]}, {"gradient_inputs": ["mask"]}):
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            _graph, _, outs, grads = _wired(**kwargs)  # (the graph kept alive)
        assert "recurrentProduct" not in grads[0].op.inputs, kwargs
        assert len(outs[0].op.outputs) == 2, kwargs  # the forward op keeps nothing
        for label in kwargs.get("gradient_inputs", ()):
            assert any(label in str(w.message) for w in warned), kwargs


def test_a_gradient_op_that_fails_leaves_the_forward_op_as_it_was():
    """The product is asked of the forward op only once the gradient op is recorded."""
    g, ph, outs, _ = _wired()
    inputs = {k: v for k, v in ph.items() if k not in ("source", "sourceGradient")}
    h, z = outs
    count = len(h.op.outputs)
    with pytest.raises(TypeError, match="name"):
        g.GRUGradients(ph["source"], **inputs, sourceGradient=ph["sourceGradient"], zState=z,
                       outputFwd=h, descriptor=rg.GRUDescriptor(training=True, resetAfter=True),
                       name=5)
    assert len(h.op.outputs) == count


def test_the_kept_product_takes_no_gradient():
    """Reachable through the gradient op's inputs, the product is a saved state like zState:
    a loss that reads it is refused rather than its share dropped."""
    g, _, outs, grads = _wired()
    product = grads[0].op.inputs["recurrentProduct"]
    with pytest.raises(ValueError, match="recurrentProduct is a saved training state"):
        g.gradients(g.reductionSum(product, axes=[0, 1, 2]), [outs[0].op.inputs["source"]])


def test_graph_gradients_use_the_kept_product(rng):
    """Graph.gradients of a non-training resetAfter GRU: the op turns training and keeps
    its product; the results match the explicit wiring with the product computed."""
    T, N, I, H = 5, 3, 4, 6
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float64, name="x")
    R = g.placeholder(shape=(3 * H, H), dataType=rg.float64, name="R")
    W = g.placeholder(shape=(3 * H, I), dataType=rg.float64, name="W")
    b2 = g.placeholder(shape=(H,), dataType=rg.float64, name="b2")
    h = g.GRU(x, recurrentWeight=R, inputWeight=W, secondaryBias=b2,
              descriptor=rg.GRUDescriptor(resetAfter=True))[0]
    grads = g.gradients(g.reductionSum(h, axes=[0, 1, 2]), [x, R, W, b2])
    gradient_ops = {t.op for t in grads.values()}
    assert any("recurrentProduct" in op.inputs for op in gradient_ops), gradient_ops
    values = {x: rng.standard_normal((T, N, I)), R: rng.standard_normal((3 * H, H)) * 0.4,
              W: rng.standard_normal((3 * H, I)) * 0.4, b2: rng.standard_normal(H) * 0.3}
    got = g.run(feeds=values, targetTensors=list(grads.values()))
    options = _options("fwd")
    arrays = {"source": values[x], "recurrentWeight": values[R], "inputWeight": values[W],
              "secondaryBias": values[b2]}
    hv, _, z = core.rnn_forward(options, arrays, training=True)
    expected = core.rnn_gradients(options, {**arrays, "sourceGradient": np.ones_like(hv),
                                            "zState": z, "outputFwd": hv})
    for tensor, label in zip((x, R, W, b2),
                             ("source", "recurrentWeight", "inputWeight", "secondaryBias")):
        assert_close(got[grads[tensor]], expected[label], "float64", label)


@pytest.mark.parametrize("dtype", [rg.float32, rg.float64])
def test_wired_results_are_bit_identical_for_every_thread_count(dtype, rng):
    """Rows split among threads (N = 24) and a team sharing each step (N = 1, H = 256): the
    kept product is the forward's own, whatever the thread count."""
    for N, H in ((24, 48), (1, 256)):
        g, ph, _, grads = _wired("bi", dtype=dtype, N=N, H=H, T=4, I=32)
        feeds = _feeds(ph, rng)
        results = []
        for n in (1, 2, 3, 4, 7):
            with blas_threads(n):
                results.append(g.run(feeds=feeds, targetTensors=grads))
        for result in results[1:]:
            for tensor in grads:
                assert np.array_equal(result[tensor], results[0][tensor]), (N, tensor.name)
