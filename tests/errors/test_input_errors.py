"""Wrong dtypes, missing inputs, inputs of the wrong kind and wrong descriptors never crash:
every op refuses them with a TypeError/ValueError that names the op and the Swift label
(SPEC.md section 7), at build time. A gradient op's descriptor must describe its forward
op's configuration; its training flag (and produceCell) does not matter (SPEC section 6)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import rnngraph as rg
from toolkit import (
    CELLS,
    GRADIENT_OPS,
    Case,
    assert_all_close,
    gradients,
    make_inputs,
    signals,
)
from toolkit.placeholders import SIZES, build, build_pair, every_input, input_shapes, op_name
from toolkit.spec import DESCRIPTORS

T, N, I = SIZES["T"], SIZES["N"], SIZES["I"]

MIXED = [("singleGateRNN", False, "recurrentWeight"), ("singleGateRNN", True, "sourceGradient"),
         ("LSTM", False, "peephole"), ("LSTM", False, "initCell"),
         ("LSTM", True, "cellOutputFwd"), ("LSTM", True, "cellGradient"),
         ("GRU", False, "secondaryBias"), ("GRU", False, "mask"), ("GRU", True, "outputFwd"),
         ("GRU", True, "zState")]


@pytest.mark.parametrize("cell,gradient,label", MIXED,
                         ids=[f"{op_name(c, g)}-{lab}" for c, g, lab in MIXED])
def test_mixed_dtypes_name_the_label(cell, gradient, label):
    with pytest.raises(TypeError, match=re.escape(f"{op_name(cell, gradient)}: {label}")):
        build(every_input(cell), gradient, dtypes={label: rg.float64})


@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradients"])
@pytest.mark.parametrize("cell", CELLS)
def test_wrong_descriptor_type(cell, gradient):
    others = [descriptor() for c, descriptor in DESCRIPTORS.items() if c != cell]
    for wrong in [*others, {"bidirectional": False}, "tanh"]:
        with pytest.raises(TypeError, match=re.escape(f"{op_name(cell, gradient)}: descriptor")):
            build(every_input(cell), gradient, descriptor=wrong)


@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradients"])
@pytest.mark.parametrize("cell", CELLS)
def test_missing_required_inputs(cell, gradient):
    op = op_name(cell, gradient)
    required = ["recurrentWeight"]
    if gradient:
        required += ["sourceGradient", "zState"]
        required += {"LSTM": ["cellOutputFwd"], "GRU": ["outputFwd"]}.get(cell, [])
    for label in required:
        with pytest.raises(ValueError, match=re.escape(f"{op}: {label}")):
            build(every_input(cell), gradient, shapes={label: None})
    with pytest.raises(TypeError, match=re.escape(f"{op}: source")):
        build(every_input(cell), gradient, shapes={"source": None})
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
    with pytest.raises(TypeError, match="recurrentWeight"):  # the keyword itself omitted
        getattr(g, op)(x)


@pytest.mark.parametrize("cell", CELLS)
def test_inputs_of_the_wrong_kind(cell):
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
    R = g.placeholder(shape=input_shapes(every_input(cell))["recurrentWeight"],
                      dataType=rg.float32, name="R")
    for bad in ([[1.0]], "R", 3.0):
        with pytest.raises(TypeError, match=re.escape(f"{cell}: recurrentWeight")):
            getattr(g, cell)(x, recurrentWeight=bad)
        with pytest.raises(TypeError, match=re.escape(f"{cell}: bias")):
            getattr(g, cell)(x, recurrentWeight=R, bias=bad)
    with pytest.raises(TypeError, match=re.escape(f"{cell}: source")):
        getattr(g, cell)(np.zeros((T, N, I), np.float32).tolist(), recurrentWeight=R)


# Descriptor properties that change the math, as case ids: a gradient op must not differ from
# its forward op in any of them.
MISMATCHES = [("singleGateRNN", "fwd-act=tanh"), ("singleGateRNN", "reverse"),
              ("LSTM", "fwd-forgetGateLast"), ("LSTM", "reverse"), ("LSTM", "fwd-z=sigmoid"),
              ("GRU", "fwd-resetAfter"), ("GRU", "fwd-resetGateFirst"), ("GRU", "fwd-flipZ"),
              ("GRU", "fwd-o=relu")]


@pytest.mark.parametrize("cell,text", MISMATCHES, ids=[f"{c}-{t}" for c, t in MISMATCHES])
def test_gradient_descriptor_must_match_the_forward_op(cell, text):
    case, plain = every_input(cell, text), every_input(cell)
    changed, default = case.descriptor(), plain.descriptor()
    (key,) = [k for k, v in changed.as_dict().items() if v != default.as_dict()[k]]
    with pytest.raises(ValueError) as info:  # at build time, in both directions
        build_pair(case, default, changed)
    assert key in str(info.value) and str(info.value).startswith(f"{GRADIENT_OPS[cell]}:")
    with pytest.raises(ValueError, match=key):
        build_pair(case, changed, default)
    grads = build_pair(case, changed, changed)  # agreeing descriptors build
    assert len(grads) == len(case.returned)


@pytest.mark.parametrize("cell", CELLS)
def test_gradient_descriptor_training_and_produce_cell_do_not_matter(cell, rng):
    """SPEC.md section 6: the gradient op's training flag is irrelevant (and produceCell)."""
    case = Case(cell, signal="dy").with_all_inputs()
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    plain = gradients(case, x, sig)
    if cell == "LSTM":  # the forward op keeps produceCell False; only the gradient op's is set
        flagged = gradients(case, x, sig, forward_overrides={"produceCell": False},
                            training=True, produceCell=True)
    else:
        flagged = gradients(case, x, sig, training=True)
    # Equal up to rounding: the vectorised kernels' summation order follows buffer alignment.
    assert_all_close(flagged, plain, "float64", f"{cell} {case.id}")
