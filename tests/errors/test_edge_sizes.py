"""Edge sizes with every input given: an empty sequence (T = 0) or batch (N = 0) gives empty
outputs and zero weight gradients, the initial states' gradients being the final states'
cotangents; one step (T = 1) or one row (N = 1) gives the reference's outputs and gradients
that match finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit import (
    CELLS,
    GRADIENT_OPS,
    Case,
    assert_all_close,
    check_gradients,
    forward,
    gradients,
    make_inputs,
    reference,
    signals,
)


def edge_case(cell, direction, T, N, *, smooth=False, final_states=True) -> Case:
    """Every input given; GRU reset-after (the second product and secondaryBias take part);
    ``smooth``: singleGateRNN with tanh, for finite differences. ``final_states``: the
    cotangents are the final states' (dS, and dC for the LSTM; dy is zero), else dy alone."""
    options = {"resetAfter": True} if cell == "GRU" else {}
    if smooth and cell == "singleGateRNN":
        options["activations"] = {"activation": "tanh"}
    signal = None  # every cotangent
    if not smooth:
        signal = ("dS+dC" if cell == "LSTM" else "dS") if final_states else "dy"
    return Case(cell, direction, T=T, N=N, signal=signal, **options).with_all_inputs()


def _param(case):
    return pytest.param(case, id=f"{case.cell}-{case.id}")


# Without the final states' cotangents only for T = 0 and N > 0 (dy is empty in every case
# here), where the initial states' gradients are then zero.
EMPTY = [_param(edge_case(c, d, t, n, final_states=s))
         for c in CELLS for (t, n) in ((0, 2), (3, 0), (0, 0)) for d in ("fwd", "bi")
         for s in (True, False) if s or (t, n) == (0, 2)]


@pytest.mark.parametrize("case", EMPTY)
def test_empty_sequence_or_batch(case, rng):
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    out = forward(case, x)  # the runner checks the outputs against SPEC sections 1 and 5
    assert all(v.size == 0 for v in out.values())
    grads = gradients(case, x, sig)
    assert list(grads) == list(case.returned)
    for label, grad in grads.items():
        assert grad.shape == x[label].shape, label
        assert np.all(np.isfinite(grad)), label
    for label in ("recurrentWeight", "inputWeight", "bias", "peephole", "secondaryBias"):
        if label in grads:  # no step, or no batch row: nothing to accumulate
            np.testing.assert_array_equal(grads[label], 0, err_msg=label)
    if case.N > 0:  # T = 0: the final state is the initial state
        zeros = np.zeros((case.N, case.DH))
        np.testing.assert_array_equal(grads["initState"], zeros if sig.dS is None else sig.dS)
        if case.cell == "LSTM":
            np.testing.assert_array_equal(grads["initCell"], zeros if sig.dC is None else sig.dC)


SMALL = [_param(edge_case(c, d, t, n, smooth=True))
         for c in CELLS for (t, n) in ((1, 3), (4, 1), (1, 1)) for d in ("fwd", "bi")]


@pytest.mark.parametrize("case", SMALL)
def test_single_step_and_single_row(case, rng):
    """T = 1 and N = 1: forward equals the reference, every gradient its finite difference
    (initState and initCell non-zero, mask on, H = 2 != I = 3)."""
    x = make_inputs(case, rng)
    out = forward(case, x)
    expected = reference(case, x)
    assert_all_close({k: out[k] for k in expected}, expected, "float64", case.id)
    sig = signals(case, rng)
    analytic = gradients(case, x, sig)
    check_gradients(case, x, sig, analytic, through=("reference",))


@pytest.mark.parametrize("training", [False, True])
def test_an_empty_sequence_of_a_batch_too_large_for_an_array(training):
    """T = 0 with N = 2^59: nothing to compute, but zState's shape [0, N, 4H] (and with H = 4
    h's too) has more bytes than an array can: a MemoryError naming the op, as for any
    output too large to allocate, not NumPy's ValueError naming nothing. N = 2^56 fits."""
    import rnngraph as rg

    def run(N):
        g = rg.Graph()
        source = g.placeholder(shape=(None, None, 1), dataType=rg.float32, name="source")
        weights = {label: g.placeholder(shape=(16, width), dataType=rg.float32, name=label)
                   for label, width in (("inputWeight", 1), ("recurrentWeight", 4))}
        outputs = g.LSTM(source=source, **weights,
                         descriptor=rg.LSTMDescriptor(training=training))
        feeds = {source: np.empty((0, N, 1), np.float32),
                 **{t: np.zeros(t.shape, np.float32) for t in weights.values()}}
        return g.run(feeds=feeds, targetTensors=list(outputs))

    assert all(a.shape[:2] == (0, 2**56) for a in run(2**56).values())
    with pytest.raises(MemoryError, match=r"^LSTM: .*output of shape \[0, 576460752303423488"):
        run(2**59)


def test_shapes_no_array_can_hold_are_refused_when_built():
    """A shape whose known sizes already give more bytes than any array can hold (NumPy's
    limit, even with a zero or an unknown size beside them) is refused at build time, by the
    placeholder or by the op whose output it would be; one that fits builds."""
    import rnngraph as rg

    g = rg.Graph()
    for shape in [(2**62, 2**62, 5), (0, 2**62, 2**62), (None, 2**61, 2)]:
        with pytest.raises(MemoryError, match=r"^placeholder: shape \[.*\]: more bytes than"):
            g.placeholder(shape)
    assert g.placeholder((None, 2**60, 1)).shape == (None, 2**60, 1)  # 2^62 bytes: fits
    indices = g.placeholder((2**40,), dataType=rg.int32)
    with pytest.raises(MemoryError, match=r"^oneHot: output .* shape \[1099511627776, "
                                          r"1099511627776\]: more bytes than"):
        g.oneHot(indices, depth=2**40)
    # H = 2^12: the output [T, N, H] of a source [2^20, 2^30, 1] is 2^64 bytes
    weights = {label: g.placeholder((4 * 2**12, width)) for label, width
               in (("inputWeight", 1), ("recurrentWeight", 2**12))}
    with pytest.raises(MemoryError, match=r"^LSTM: output .* \[1048576, 1073741824, 4096\]: "
                                          r"more bytes than"):
        g.LSTM(source=g.placeholder((2**20, 2**30, 1)), **weights)
    g.LSTM(source=g.placeholder((None, 2**30, 1)), **weights)  # T unknown: may be small


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("bidirectional", [False, True], ids=["fwd", "bi"])
def test_gradients_of_an_empty_sequence_need_no_buffer_per_batch_row(cell, bidirectional):
    """T = 0 with N = 2^40 rows and no initial state: the gradient ops' outputs are an empty
    dsource and zero weight gradients, so they return at once; a buffer per batch row for
    time loops that take no step would need terabytes (a MemoryError refusing a valid call)."""
    import rnngraph as rg

    gates = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}[cell]
    D, N, I, H = (2 if bidirectional else 1), 2**40, 1, 4
    descriptor = {"singleGateRNN": rg.SingleGateRNNDescriptor, "LSTM": rg.LSTMDescriptor,
                  "GRU": rg.GRUDescriptor}[cell](bidirectional=bidirectional, training=True)
    weight = np.ones((D, gates * H, H) if bidirectional else (gates * H, H), np.float32)
    saved = {"LSTM": "cellOutputFwd", "GRU": "outputFwd"}

    def empty(*shape):  # a zero-size array of any shape costs no memory
        return np.zeros(shape, np.float32)

    g = rg.Graph()
    inputs = {"recurrentWeight": weight, "inputWeight": np.ones((D * gates * H, I), np.float32),
              "bias": np.ones(D * gates * H, np.float32), "sourceGradient": empty(0, N, D * H),
              "zState": empty(0, N, D * gates * H)}
    if cell in saved:
        inputs[saved[cell]] = empty(0, N, D * H)
    grads = getattr(g, GRADIENT_OPS[cell])(empty(0, N, I), **inputs, descriptor=descriptor)
    out = list(g.run(feeds={}, targetTensors=grads).values())
    assert [a.shape for a in out] == [(0, N, I), weight.shape, (D * gates * H, I),
                                      (D * gates * H,)]
    for grad in out[1:]:
        np.testing.assert_array_equal(grad, 0)
