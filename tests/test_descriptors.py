"""Descriptors and RNNActivation (SPEC.md sections 2 and 3): defaults, validation of every
property, raw values, and the copy an op takes of its descriptor when it is built."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from toolkit import (
    ACTIVATIONS,
    CELLS,
    Case,
    Signals,
    assert_all_close,
    assert_close,
    draw_inputs,
    gradients,
    reference,
    signals,
)
from toolkit.placeholders import feeds, on_placeholders
from toolkit.spec import DESCRIPTORS, FLAGS, SLOT_DEFAULTS


def spec_defaults(cell) -> dict:
    """SPEC section 3: every property of the cell's descriptor and its default."""
    booleans = ("reverse", "bidirectional", *(("produceCell",) if cell == "LSTM" else ()),
                "training", *FLAGS[cell])
    return {name: False for name in booleans} | {
        slot: getattr(rg.RNNActivation, name) for slot, name in SLOT_DEFAULTS[cell].items()}


@pytest.mark.parametrize("cell", CELLS, ids=[DESCRIPTORS[c].__name__ for c in CELLS])
def test_descriptor_defaults_are_spec_section_3(cell):
    d = DESCRIPTORS[cell]()
    for name, value in spec_defaults(cell).items():
        actual = getattr(d, name)
        assert actual == value and type(actual) is type(value), f"{cell}.{name}"
    assert set(d.as_dict()) == set(spec_defaults(cell))  # no property beyond SPEC.md's


@pytest.mark.parametrize("cell", CELLS, ids=[DESCRIPTORS[c].__name__ for c in CELLS])
def test_descriptor_property_validation(cell):
    kind = DESCRIPTORS[cell]
    d = kind()
    for name in SLOT_DEFAULTS[cell]:
        for bad in (7, -1, 5):
            with pytest.raises(ValueError, match=name):
                setattr(d, name, bad)
            with pytest.raises(ValueError):
                kind(**{name: bad})
        for raw in range(5):
            setattr(d, name, raw)
            assert getattr(d, name) == rg.RNNActivation(raw)
            assert isinstance(getattr(d, name), rg.RNNActivation)
    for name in (n for n, v in spec_defaults(cell).items() if isinstance(v, bool)):
        for bad in (1, 0, "yes", None):
            with pytest.raises(TypeError, match=name):
                setattr(d, name, bad)
        with pytest.raises(TypeError):
            kind(**{name: 1})
        setattr(d, name, True)
        assert getattr(d, name) is True
    for unknown in ("foo", "bidirectonal", "Reverse"):
        with pytest.raises(AttributeError, match=unknown):
            setattr(d, unknown, True)
        with pytest.raises((AttributeError, TypeError)):
            kind(**{unknown: True})
        assert not hasattr(d, unknown)
        with pytest.raises(AttributeError, match=unknown):
            delattr(d, unknown)


@pytest.mark.parametrize("cell", CELLS, ids=[DESCRIPTORS[c].__name__ for c in CELLS])
def test_numpy_scalars_are_taken_as_python_values(cell):
    """A NumPy bool or integer (from an array, a config file read with NumPy) is stored as the
    Python value: flags as bool, activations as RNNActivation; NumPy floats stay refused."""
    kind = DESCRIPTORS[cell]
    flags = [n for n, v in spec_defaults(cell).items() if isinstance(v, bool)]
    for name in flags:
        d = kind(**{name: np.True_})
        assert getattr(d, name) is True
        setattr(d, name, np.bool_(False))
        assert getattr(d, name) is False
    for name in SLOT_DEFAULTS[cell]:
        for integer in (np.int64(4), np.int32(1), np.uint8(0)):
            d = kind(**{name: integer})
            assert getattr(d, name) is rg.RNNActivation(int(integer))
        with pytest.raises(ValueError, match=name):
            kind(**{name: np.int64(5)})
        with pytest.raises(TypeError, match=name):
            kind(**{name: np.float64(2.0)})
        with pytest.raises(TypeError, match=name):
            kind(**{name: np.True_})


@pytest.mark.parametrize("cell", CELLS, ids=[DESCRIPTORS[c].__name__ for c in CELLS])
def test_a_property_cannot_be_lost(cell):
    """``del`` is refused with the default named; one removed around the descriptor's own
    checks is refused by name when an op is built with it."""
    kind = DESCRIPTORS[cell]
    d = kind(training=True)
    with pytest.raises(AttributeError, match=rf"^{kind.__name__}\.training: .*default: False"):
        del d.training
    assert d.training is True
    object.__delattr__(d, "training")
    g = rg.Graph()
    op = {"singleGateRNN": g.singleGateRNN, "LSTM": g.LSTM, "GRU": g.GRU}[cell]
    gates = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}[cell]
    x = g.placeholder((2, 1, gates * 2), rg.float32)  # no inputWeight: [T, N, gates·H]
    R = g.placeholder((gates * 2, 2), rg.float32)
    with pytest.raises(ValueError, match=rf"^{cell}: descriptor: {kind.__name__}\.training: "
                       r"the property is missing"):
        op(x, recurrentWeight=R, descriptor=d)


def test_rnn_activation_raw_values():
    assert [(a.name, int(a)) for a in rg.RNNActivation] == [
        (name, raw) for raw, name in enumerate(ACTIVATIONS)]
    for raw, name in enumerate(ACTIVATIONS):
        assert rg.RNNActivation(raw) is getattr(rg.RNNActivation, name)
    for bad in (5, -1, 7):
        with pytest.raises(ValueError):
            rg.RNNActivation(bad)


def test_descriptor_is_copied_when_an_op_is_built(rng):
    """SPEC.md section 3: later changes to the descriptor do not affect built ops."""
    case = Case.parse("singleGateRNN", "fwd-act=tanh-h0-dy-H4")
    x = draw_inputs(case, rng)
    desc = case.descriptor(training=True)
    g, ph, (h, z) = on_placeholders(case, dataType=rg.float64, descriptor=desc)
    dy = g.placeholder(shape=(case.T, case.N, case.H), dataType=rg.float64, name="dy")
    inputs = {k: v for k, v in ph.items() if k != "source"}
    grads = g.singleGateRNNGradients(ph["source"], **inputs, sourceGradient=dy, zState=z,
                                     descriptor=desc)
    desc.activation = rg.RNNActivation.relu
    desc.reverse = True
    desc.training = False
    assert desc.activation == rg.RNNActivation.relu  # the caller's object did change
    sig = signals(case, rng)
    out = g.run(feeds=feeds(ph, x) | {dy: sig.dy}, targetTensors=[h, z, *grads])
    assert_close(out[h], reference(case, x)["h"], "float64", "h")
    expected = gradients(case, x, Signals(sig.dy))
    assert_all_close(dict(zip(case.returned, (out[t] for t in grads))), expected, "float64")


@pytest.mark.parametrize("cell,flag", [("LSTM", "forgetGateLast"), ("GRU", "resetGateFirst")])
def test_descriptor_copy_on_build_lstm_gru(cell, flag, rng):
    case = Case(cell, initState="[N,DH]", initCell="[N,DH]" if cell == "LSTM" else None)
    x = draw_inputs(case, rng)
    desc = case.descriptor()
    g, ph, outputs = on_placeholders(case, dataType=rg.float64, descriptor=desc)
    setattr(desc, flag, True)
    desc.reverse = True
    out = g.run(feeds=feeds(ph, x), targetTensors=outputs[:1])
    assert_close(out[outputs[0]], reference(case, x)["h"], "float64", "h")


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "singleGateRNN"])
def test_reverse_is_not_compared_when_bidirectional(cell):
    """SPEC.md section 3: reverse is ignored when bidirectional is set, so a gradient op
    whose descriptor differs from its forward op's only in reverse describes the same
    computation: accepted, with the same gradients."""
    import numpy as np

    T, N, I, H = 3, 2, 3, 2
    G = {"LSTM": 4, "GRU": 3, "singleGateRNN": 1}[cell]
    gen = np.random.default_rng(0)
    x = gen.standard_normal((T, N, I))
    R, W = gen.standard_normal((2, G * H, H)), gen.standard_normal((2 * G * H, I))
    descriptor = getattr(rg, f"{cell[0].upper()}{cell[1:]}Descriptor")
    results = []
    for reverse in (True, False):
        g = rg.Graph()
        outs = getattr(g, cell)(x, recurrentWeight=R, inputWeight=W,
                                descriptor=descriptor(bidirectional=True, reverse=True,
                                                      training=True))
        extra = {"cellOutputFwd": outs[1]} if cell == "LSTM" else {}
        if cell == "GRU":
            extra = {"outputFwd": outs[0]}
        grads = getattr(g, f"{cell}Gradients")(
            x, recurrentWeight=R, inputWeight=W, sourceGradient=outs[0], zState=outs[-1],
            descriptor=descriptor(bidirectional=True, reverse=reverse), **extra)
        results.append(g.run(targetTensors=list(grads)))
    for a, b in zip(*(r.values() for r in results)):
        assert np.array_equal(a, b)
