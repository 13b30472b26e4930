"""LSTM-specific argument errors: they name the op, the Swift label and the expected layout,
both when the shape is known at build time and when it is only known at run time."""

import re

import numpy as np
import pytest

import lstm_helpers as lh
import rnngraph as rg

T, N, I, H = 3, 2, 3, 2


def build_forward(shapes, desc=None):
    """Build LSTM from placeholders of the given shapes (None dims allowed)."""
    g = rg.Graph()
    ph = {k: g.placeholder(shape=s, dataType=rg.float64, name=k) for k, s in shapes.items()}
    source = ph.pop("source")
    return g, ph | {"source": source}, g.LSTM(source, **{k: v for k, v in ph.items()},
                                              descriptor=desc)


def forward_shapes(bidirectional=False, **changes):
    D = 2 if bidirectional else 1
    shapes = {"source": (T, N, I),
              "recurrentWeight": (2, 4 * H, H) if bidirectional else (4 * H, H),
              "inputWeight": (D * 4 * H, I), "bias": (D * 4 * H,), "initState": (N, D * H),
              "initCell": (N, D * H)}
    shapes.update(changes)
    return {k: v for k, v in shapes.items() if v is not None}


def expect(message_parts, exception=ValueError):
    pattern = ".*".join(re.escape(p) for p in message_parts)
    return pytest.raises(exception, match=pattern)


def test_recurrent_weight_with_three_gates():
    with expect(["LSTM", "recurrentWeight", "[4H, H]", "[8, 2]", "[6, 2]"]):
        build_forward(forward_shapes(recurrentWeight=(3 * H, H)))


def test_recurrent_weight_with_three_gates_bidirectional():
    with expect(["LSTM", "recurrentWeight", "[2, 4H, H]", "[2, 6, 2]"]):
        build_forward(forward_shapes(True, recurrentWeight=(2, 3 * H, H)),
                      rg.LSTMDescriptor(bidirectional=True))


def test_recurrent_weight_with_three_gates_at_run_time():
    # Shape unknown while building: the same error when the arrays arrive.
    shapes = forward_shapes(recurrentWeight=(None, None))
    g, ph, (h,) = build_forward(shapes)
    feeds = {ph[k]: np.zeros(s) for k, s in forward_shapes(recurrentWeight=(3 * H, H)).items()}
    with expect(["LSTM", "recurrentWeight", "[4H, H]", "[6, 2]"]):
        g.run(feeds=feeds, targetTensors=[h])


@pytest.mark.parametrize("bidirectional, shape", [
    (False, (3 * H,)), (False, (8 * H,)), (False, (1, 4 * H)), (False, (2, 4 * H)),
    (True, (4 * H,)), (True, (2, 3 * H)), (True, (1, 8 * H)),
], ids=["uni[3H]", "uni[8H]", "uni[1,4H]", "uni[2,4H]", "bi[4H]", "bi[2,3H]", "bi[1,8H]"])
def test_peephole_wrong_size(bidirectional, shape):
    with expect(["LSTM", "peephole", "4H"]):
        build_forward(forward_shapes(bidirectional, peephole=shape),
                      rg.LSTMDescriptor(bidirectional=bidirectional))


@pytest.mark.parametrize("shape", [(N, H + 1), (2, N, H), (N + 1, H), (N,)],
                         ids=["[N,H+1]", "[2,N,H]", "[N+1,H]", "[N]"])
def test_init_cell_wrong_shape(shape):
    with expect(["LSTM", "initCell", "[N, H]"]):
        build_forward(forward_shapes(initCell=shape))


def test_init_cell_wrong_shape_bidirectional():
    with expect(["LSTM", "initCell", "[N, 2H]"]):
        build_forward(forward_shapes(True, initCell=(N, H)), rg.LSTMDescriptor(bidirectional=True))


def test_init_cell_wrong_shape_at_run_time():
    g, ph, (h,) = build_forward(forward_shapes(initCell=(None, None)))
    feeds = {ph[k]: np.zeros(s) for k, s in forward_shapes(initCell=(N, 2 * H)).items()}
    with expect(["LSTM", "initCell", "[N, H]", "[2, 4]"]):
        g.run(feeds=feeds, targetTensors=[h])


def build_gradients(**changes):
    """LSTMGradients from placeholders; ``changes`` replace (or, with None, drop) the
    shapes of its inputs. ``omit`` leaves the keyword out of the call entirely."""
    omit = changes.pop("omit", ())
    shapes = {"source": (T, N, I), "recurrentWeight": (4 * H, H), "inputWeight": (4 * H, I),
              "sourceGradient": (T, N, H), "zState": (T, N, 4 * H), "cellOutputFwd": (T, N, H),
              "stateGradient": (N, H), "cellGradient": (N, H), "initCell": (N, H)}
    shapes.update(changes)
    g = rg.Graph()
    ph = {k: (None if s is None else g.placeholder(shape=s, dataType=rg.float64, name=k))
          for k, s in shapes.items() if k not in omit}
    source = ph.pop("source")
    return g, g.LSTMGradients(source, **ph)


def test_gradients_builds_with_valid_shapes():
    # The baseline of the error tests below is valid: 4 gradients, shaped like the inputs.
    _, grads = build_gradients()
    assert [t.shape for t in grads] == [(T, N, I), (4 * H, H), (4 * H, I), (N, H)]


def test_cell_output_fwd_missing():
    with expect(["cellOutputFwd"], TypeError):
        build_gradients(omit=("cellOutputFwd",))
    with expect(["LSTMGradients", "cellOutputFwd", "required"]):
        build_gradients(cellOutputFwd=None)


@pytest.mark.parametrize("shape", [(T, N, 4 * H), (T, N, 2 * H), (T + 1, N, H), (N, H)],
                         ids=["[T,N,4H]", "[T,N,2H]", "[T+1,N,H]", "[N,H]"])
def test_cell_output_fwd_wrong_shape(shape):
    with expect(["LSTMGradients", "cellOutputFwd", "[T, N, H]"]):
        build_gradients(cellOutputFwd=shape)


@pytest.mark.parametrize("shape", [(N, 2 * H), (T, N, H), (N + 1, H)],
                         ids=["[N,2H]", "[T,N,H]", "[N+1,H]"])
def test_cell_gradient_wrong_shape(shape):
    with expect(["LSTMGradients", "cellGradient", "[N, H]"]):
        build_gradients(cellGradient=shape)


@pytest.mark.parametrize("gates", [1, 3, 8])
def test_z_state_with_wrong_gate_count(gates):
    with expect(["LSTMGradients", "zState", "[T, N, 4H]"]):
        build_gradients(zState=(T, N, gates * H))


def test_z_state_with_wrong_gate_count_at_run_time():
    g = rg.Graph()
    ph = {k: g.placeholder(shape=(None, None, None), dataType=rg.float64, name=k)
          for k in ("source", "sourceGradient", "zState", "cellOutputFwd")}
    R = g.placeholder(shape=(4 * H, H), dataType=rg.float64)
    W = g.placeholder(shape=(4 * H, I), dataType=rg.float64)
    source = ph.pop("source")
    grads = g.LSTMGradients(source, recurrentWeight=R, inputWeight=W, **ph)
    shapes = {"sourceGradient": (T, N, H), "zState": (T, N, 3 * H), "cellOutputFwd": (T, N, H)}
    feeds = {ph[k]: np.zeros(s) for k, s in shapes.items()}
    feeds |= {source: np.zeros((T, N, I)), R: np.zeros((4 * H, H)), W: np.zeros((4 * H, I))}
    with expect(["LSTMGradients", "zState", "[T, N, 4H]", "[3, 2, 6]"]):
        g.run(feeds=feeds, targetTensors=grads)


def test_gradient_descriptor_must_match_the_forward():
    # SPEC.md section 6: the gradient op's descriptor describes the same configuration as
    # the forward op (only training, and produceCell, may differ).
    x = lh.make_inputs(np.random.default_rng(0))
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in x.items()}
    source = ph.pop("source")
    h, c, z = g.LSTM(source, **ph, descriptor=rg.LSTMDescriptor(training=True))
    with expect(["LSTMGradients", "forgetGateLast"]):
        g.LSTMGradients(source, **ph, sourceGradient=h, zState=z, cellOutputFwd=c,
                        descriptor=rg.LSTMDescriptor(forgetGateLast=True))
