"""GRU- and GRUGradients-specific argument errors: a wrong shape is refused with a message
naming the op, the Swift label, the expected layout (SPEC.md section 1) and both shapes, at
build time or, when the shape is unknown then, at run time; outputFwd is required; the LSTM's
arguments and descriptor are refused; a gradient op's descriptor must match its forward op's.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import rnngraph as rg
from toolkit.placeholders import SIZES, build, build_pair, every_input, input_shapes

T, N, I, H = (SIZES[k] for k in "TNIH")
UNI, BI = every_input("GRU", "fwd"), every_input("GRU", "bi")
G = UNI.G  # gates; G + 1 of them is an LSTM's count


def refused(op, label, layout, expected, got):
    """pytest.raises for SPEC's message: "<op>: <label>: expected shape <layout> = <expected>,
    got <got>" (shapes spelled [a, b])."""
    def spelled(shape):
        return "[" + ", ".join(str(d) for d in shape) + "]"

    message = f"{op}: {label}: expected shape {layout} = {spelled(expected)}, got {spelled(got)}"
    return pytest.raises(ValueError, match=re.escape(message) + "$")


# --- the forward op ------------------------------------------------------------------------

@pytest.mark.parametrize("case, layout", [(UNI, "[3H, H]"), (BI, "[2, 3H, H]")],
                         ids=["uni", "bi"])
def test_recurrent_weight_of_four_gates(case, layout):
    shape = input_shapes(case)["recurrentWeight"]
    four = shape[:-2] + ((G + 1) * H, H)
    with refused("GRU", "recurrentWeight", layout, shape, four):
        build(case, shapes={"recurrentWeight": four})


def test_recurrent_weight_checked_at_run_time_when_unknown_at_build_time():
    shapes = input_shapes(UNI)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=(None, None) if k == "recurrentWeight" else s,
                           dataType=rg.float64, name=k) for k, s in shapes.items()}
    (h,) = g.GRU(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                 descriptor=UNI.descriptor())
    feeds = {ph[k]: np.zeros(s) for k, s in shapes.items()}
    feeds[ph["recurrentWeight"]] = np.zeros(((G + 1) * H, H))
    with refused("GRU", "recurrentWeight", "[3H, H]", shapes["recurrentWeight"], ((G + 1) * H, H)):
        g.run(feeds=feeds, targetTensors=[h])


SECONDARY_BIASES = [(UNI, (2 * H,)), (UNI, (H + 1,)), (BI, (H,)), (UNI, (1, H))]


@pytest.mark.parametrize("after", [False, True], ids=["resetBefore", "resetAfter"])
@pytest.mark.parametrize("case, shape", SECONDARY_BIASES,
                         ids=[f"{c.direction}-{list(s)}" for c, s in SECONDARY_BIASES])
def test_secondary_bias_of_wrong_size(case, shape, after):
    """Refused even where it is unused (reset before)."""
    layout = "[2H]" if case.bidirectional else "[H]"
    with refused("GRU", "secondaryBias", layout, (case.DH,), shape):
        build(case.but(resetAfter=after), shapes={"secondaryBias": shape})


@pytest.mark.parametrize("case, shape, layout", [(UNI, (T, N, (G + 1) * H), "[T, N, 3H]"),
                                                 (BI, (T, N, G * H), "[T, N, 6H]")],
                         ids=["uni-4H", "bi-3H"])
def test_projected_source_of_wrong_width(case, shape, layout):
    """Without inputWeight the source is x', [T, N, D·3H]."""
    projected = case.but(inputWeight=False)
    with refused("GRU", "source", layout, input_shapes(projected)["source"], shape):
        build(projected, shapes={"source": shape})


# --- the gradient op -----------------------------------------------------------------------

def test_gradients_without_output_fwd():
    shapes = input_shapes(UNI, gradient=True)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=s, dataType=rg.float32, name=k) for k, s in shapes.items()}
    required = ("recurrentWeight", "sourceGradient", "zState")
    with pytest.raises(TypeError, match="outputFwd"):  # the keyword omitted
        g.GRUGradients(ph["source"], **{k: ph[k] for k in required})
    with pytest.raises(ValueError, match=re.escape("GRUGradients: outputFwd is required")):
        build(UNI, gradient=True, shapes={"outputFwd": None})


WRONG_GRADIENT_INPUTS = [
    ("outputFwd", (T, N, G * H), "[T, N, H]"),
    ("outputFwd", (T + 1, N, H), "[T, N, H]"),
    ("outputFwd", (N, G * H), "[T, N, H]"),  # wrong rank
    ("zState", (T, N, (G + 1) * H), "[T, N, 3H]"),
    ("secondaryBias", (2 * H,), "[H]"),
    ("recurrentWeight", ((G + 1) * H, H), "[3H, H]"),
]


@pytest.mark.parametrize("label, shape, layout", WRONG_GRADIENT_INPUTS,
                         ids=[f"{lab}-{list(s)}" for lab, s, _ in WRONG_GRADIENT_INPUTS])
def test_gradient_inputs_of_wrong_shape(label, shape, layout):
    case = UNI.but(resetAfter=True)
    expected = input_shapes(case, gradient=True)[label]
    with refused("GRUGradients", label, layout, expected, shape):
        build(case, gradient=True, shapes={label: shape})


# --- what belongs to the LSTM; descriptors -----------------------------------------------

@pytest.mark.parametrize("gradient", [False, True], ids=["GRU", "GRUGradients"])
@pytest.mark.parametrize("label", ["initCell", "peephole", "cellOutputFwd", "cellGradient"])
def test_lstm_only_arguments(label, gradient):
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{label}'"):
        build(UNI, gradient, shapes={label: (N, H)})


@pytest.mark.parametrize("gradient", [False, True], ids=["GRU", "GRUGradients"])
def test_lstm_descriptor(gradient):
    op = "GRUGradients" if gradient else "GRU"
    message = f"{op}: descriptor: expected GRUDescriptor, got LSTMDescriptor"
    with pytest.raises(TypeError, match=re.escape(message)):
        build(UNI, gradient, descriptor=rg.LSTMDescriptor())


@pytest.mark.parametrize("text, prop", [("fwd-resetAfter", "resetAfter"),
                                        ("reverse", "reverse"),
                                        ("fwd-z=tanh", "updateGateActivation"),
                                        ("fwd-r=hardSigmoid", "resetGateActivation")])
def test_gradient_descriptor_must_match_the_forward_op(text, prop):
    """SPEC.md section 6; the message names the property and both values."""
    changed = every_input("GRU", text).descriptor()
    ours, theirs = (v if isinstance(v, bool) else int(v)
                    for v in (getattr(changed, prop), getattr(UNI.descriptor(), prop)))
    message = (re.escape(f"GRUGradients: descriptor: {prop}={ours} differs from the GRU op ")
               + r"'GRU_\d+'" + re.escape(f" that produced zState ({prop}={theirs})"))
    with pytest.raises(ValueError, match=message):
        build_pair(UNI, UNI.descriptor(), changed)
