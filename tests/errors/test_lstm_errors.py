"""LSTM-specific argument errors: they name the op, the Swift label and the expected layout
(SPEC.md section 1), both when the shape is known at build time and when it is known only at
run time; a gradient op whose descriptor differs from its forward op's is refused."""

from __future__ import annotations

import re

import numpy as np
import pytest

import rnngraph as rg
from toolkit import GATES, RETURNED, Case
from toolkit.placeholders import SIZES, build, build_pair, every_input, input_shapes, op_name

T, N, I, H = (SIZES[k] for k in "TNIH")
G = GATES["LSTM"]
UNI, BI = every_input("LSTM", "fwd"), every_input("LSTM", "bi")


def expect(*fragments, exception=ValueError):
    """pytest.raises for a message holding ``fragments`` in this order."""
    return pytest.raises(exception, match=".*".join(re.escape(f) for f in fragments))


def spelled(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def run(case, gradient=False, *, unknown=(), fed=None):
    """Build the op of ``case`` on float64 placeholders whose ``unknown`` labels have no
    known dimension, then run it on zeros of the case's shapes, ``fed`` overriding some."""
    shapes = input_shapes(case, gradient)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=(None,) * len(s) if k in unknown else s, dataType=rg.float64,
                           name=k) for k, s in shapes.items()}
    outputs = getattr(g, op_name(case.cell, gradient))(
        ph["source"], **{k: v for k, v in ph.items() if k != "source"},
        descriptor=case.descriptor())
    feeds = {ph[k]: np.zeros((fed or {}).get(k, s)) for k, s in shapes.items()}
    return g.run(feeds=feeds, targetTensors=outputs)


# --- the forward op ------------------------------------------------------------------------

@pytest.mark.parametrize("case, layout", [(UNI, f"[{G}H, H]"), (BI, f"[2, {G}H, H]")],
                         ids=["uni", "bi"])
def test_recurrent_weight_with_three_gates(case, layout):
    shape = input_shapes(case)["recurrentWeight"]
    three = shape[:-2] + ((G - 1) * H, H)
    with expect("LSTM", "recurrentWeight", layout, spelled(shape), spelled(three)):
        build(case, shapes={"recurrentWeight": three})


def test_recurrent_weight_with_three_gates_at_run_time():
    """The shape unknown while building: the same error when the arrays arrive."""
    three = ((G - 1) * H, H)
    with expect("LSTM", "recurrentWeight", f"[{G}H, H]", spelled(three)):
        run(UNI, unknown=("recurrentWeight",), fed={"recurrentWeight": three})


PEEPHOLES = [(UNI, ((G - 1) * H,)), (UNI, (2 * G * H,)), (UNI, (1, G * H)), (UNI, (2, G * H)),
             (BI, (G * H,)), (BI, (2, (G - 1) * H)), (BI, (1, 2 * G * H))]


@pytest.mark.parametrize("case, shape", PEEPHOLES, ids=[
    f"{c.direction}{spelled(s).replace(' ', '')}" for c, s in PEEPHOLES])
def test_peephole_wrong_size(case, shape):
    with expect("LSTM", "peephole", f"{G}H", spelled(shape)):
        build(case, shapes={"peephole": shape})


INIT_CELLS = [(UNI, (N, H + 1)), (UNI, (2, N, H)), (UNI, (N + 1, H)), (UNI, (N,)),
              (BI, (N, H))]


@pytest.mark.parametrize("case, shape", INIT_CELLS, ids=[
    f"{c.direction}{spelled(s).replace(' ', '')}" for c, s in INIT_CELLS])
def test_init_cell_wrong_shape(case, shape):
    with expect("LSTM", "initCell", "[N, 2H]" if case.bidirectional else "[N, H]"):
        build(case, shapes={"initCell": shape})


def test_init_cell_wrong_shape_at_run_time():
    with expect("LSTM", "initCell", "[N, H]", spelled((N, 2 * H))):
        run(UNI, unknown=("initCell",), fed={"initCell": (N, 2 * H)})


# --- the gradient op -------------------------------------------------------------------------

def test_gradients_build_with_valid_shapes():
    """The baseline of the error tests below is valid: one gradient per given input (SPEC
    section 6), each shaped like it."""
    shapes = input_shapes(UNI)
    grads = build(UNI, gradient=True)
    assert [t.shape for t in grads] == [shapes[label] for label in UNI.returned]
    assert len(grads) == len(RETURNED["LSTM"])


def test_cell_output_fwd_missing():
    g = rg.Graph()
    ph = {k: g.placeholder(shape=s, dataType=rg.float32, name=k)
          for k, s in input_shapes(UNI, gradient=True).items()}
    required = ("recurrentWeight", "sourceGradient", "zState")
    with expect("cellOutputFwd", exception=TypeError):
        g.LSTMGradients(ph["source"], **{k: ph[k] for k in required})
    with expect("LSTMGradients", "cellOutputFwd", "required"):
        build(UNI, gradient=True, shapes={"cellOutputFwd": None})


@pytest.mark.parametrize("shape", [(T, N, G * H), (T, N, 2 * H), (T + 1, N, H), (N, H)],
                         ids=["[T,N,GH]", "[T,N,2H]", "[T+1,N,H]", "[N,H]"])
def test_cell_output_fwd_wrong_shape(shape):
    with expect("LSTMGradients", "cellOutputFwd", "[T, N, H]"):
        build(UNI, gradient=True, shapes={"cellOutputFwd": shape})


@pytest.mark.parametrize("shape", [(N, 2 * H), (T, N, H), (N + 1, H)],
                         ids=["[N,2H]", "[T,N,H]", "[N+1,H]"])
def test_cell_gradient_wrong_shape(shape):
    with expect("LSTMGradients", "cellGradient", "[N, H]"):
        build(UNI, gradient=True, shapes={"cellGradient": shape})


@pytest.mark.parametrize("gates", [1, G - 1, 2 * G])
def test_z_state_with_wrong_gate_count(gates):
    with expect("LSTMGradients", "zState", f"[T, N, {G}H]", spelled((T, N, gates * H))):
        build(UNI, gradient=True, shapes={"zState": (T, N, gates * H)})


def test_z_state_with_wrong_gate_count_at_run_time():
    with expect("LSTMGradients", "zState", f"[T, N, {G}H]", spelled((T, N, (G - 1) * H))):
        run(UNI, gradient=True, fed={"zState": (T, N, (G - 1) * H)},
            unknown=("source", "sourceGradient", "zState", "cellOutputFwd"))


@pytest.mark.parametrize("text", ["fwd-forgetGateLast", "fwd-i=tanh", "fwd-f=hardSigmoid",
                                  "fwd-o=relu", "fwd-act=sigmoid"])
def test_gradient_descriptor_must_match_the_forward(text):
    """SPEC section 6: the gradient op's descriptor describes the forward op's configuration
    (only training and produceCell may differ); the message names the property."""
    changed = Case.parse("LSTM", text)
    prop = changed.activations[0][0] if changed.activations else "forgetGateLast"
    with expect("LSTMGradients", "descriptor", prop, "differs"):
        build_pair(UNI, UNI.descriptor(), changed.descriptor())
