"""Graph.gradients over the whole graph: the walk's pruning and caching, the recurrent forward
op turned training in place (it runs once), the LSTM's cell sequence as a differentiable
output, integer paths, variables, and gradients that accumulate over several uses."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import FD_BOUND, fd_check
from rnngraph.ops import recurrent

T, N, I, H = 4, 3, 5, 2


def lstm_inputs(rng):
    return {
        "source": rng.standard_normal((T, N, I)) * 0.5,
        "recurrentWeight": rng.standard_normal((4 * H, H)) * 0.5,
        "inputWeight": rng.standard_normal((4 * H, I)) * 0.5,
        "initCell": rng.standard_normal((N, H)) * 0.5,
    }


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("use", ["c", "h+c"])
def test_the_lstm_cell_sequence_is_differentiable(rng, use, bidirectional):
    """A loss of c (every step), alone or with h, against central differences."""
    D = 2 if bidirectional else 1
    inputs = lstm_inputs(rng)
    inputs["recurrentWeight"] = rng.standard_normal((2, 4 * H, H) if D == 2 else (4 * H, H)) * 0.5
    inputs["inputWeight"] = rng.standard_normal((D * 4 * H, I)) * 0.5
    inputs["initCell"] = rng.standard_normal((N, D * H)) * 0.5
    descriptor = rg.LSTMDescriptor(produceCell=True, bidirectional=bidirectional)

    def build(g, t):
        h, c = g.LSTM(
            t["source"],
            recurrentWeight=t["recurrentWeight"],
            inputWeight=t["inputWeight"],
            initCell=t["initCell"],
            descriptor=descriptor,
        )
        return c if use == "c" else g.addition(h, g.multiplication(c, 0.7))

    assert fd_check(build, inputs, rng, where=f"LSTM {use}") < FD_BOUND


def test_the_forward_op_runs_once_for_its_outputs_and_the_gradient(rng, monkeypatch):
    g = rg.Graph()
    x = g.placeholder((T, N, I), rg.float64)
    R = g.placeholder((4 * H, H), rg.float64)
    W = g.placeholder((4 * H, I), rg.float64)
    (h,) = g.LSTM(x, recurrentWeight=R, inputWeight=W)  # not a training op
    loss = g.reductionSum(g.square(h), axes=[0, 1, 2])
    grads = g.gradients(of=loss, with_=[x, R, W])
    calls = []  # each forward call's training flag, through either of the op's core paths
    real, real_prepare = recurrent._core.rnn_forward, recurrent._core.prepare_forward

    def counting(*args, **kwargs):
        calls.append(kwargs.get("training"))
        return real(*args, **kwargs)

    class CountedPrepared:
        def __init__(self, prepared, training):
            self.prepared, self.training = prepared, training

        def run(self, *arrays):
            calls.append(self.training)
            return self.prepared.run(*arrays)

    def counting_prepare(*args, **kwargs):
        return CountedPrepared(real_prepare(*args, **kwargs), kwargs.get("training"))

    monkeypatch.setattr(recurrent._core, "rnn_forward", counting)
    monkeypatch.setattr(recurrent._core, "prepare_forward", counting_prepare)
    arrays = lstm_inputs(rng)
    feeds = {x: arrays["source"], R: arrays["recurrentWeight"], W: arrays["inputWeight"]}
    out = g.run(feeds=feeds, targetTensors=[h, loss, *grads.values()])
    assert calls == [True]
    assert [op.kind for op in g._ops].count("LSTM") == 1
    assert h.op.outputs[0] is h  # the user's tensor is unchanged
    calls.clear()
    alone = g.run(feeds=feeds, targetTensors=[h])[h]
    assert calls == [True]  # h alone: one run of the op, still the training one
    np.testing.assert_array_equal(alone, out[h])


def test_gradients_called_again_reuse_what_they_recorded():
    g = rg.Graph()
    x = g.placeholder((T, N, I), rg.float32)
    R = g.placeholder((4 * H, H), rg.float32)
    W = g.variable(np.zeros((4 * H, I)), shape=(4 * H, I), dataType=rg.float32)
    (h,) = g.LSTM(x, recurrentWeight=R, inputWeight=W)
    loss = g.mean(g.square(h), axes=[0, 1, 2])
    first = g.gradients(of=loss, with_=[W, R])
    ops = len(g._ops)
    feeds = {x: np.ones((T, N, I), np.float32), R: np.ones((4 * H, H), np.float32)}
    agains = [g.gradients(of=loss, with_=[W, R]) for _ in range(5)]
    for _ in range(20):
        g.run(feeds=feeds, targetTensors=[loss, agains[-1][W]])
    assert all(again == first for again in agains)
    assert len(g._ops) == ops
    assert len(g._gradients) == 1  # the record of gradients() does not grow either
    assert len(g._plans) == 1
    swapped = g.gradients(of=loss, with_=[R, W])  # the same tensors in another order
    assert list(swapped) == [R, W] and swapped == first and len(g._ops) == ops


def test_the_walk_visits_only_paths_from_with(rng):
    """Ops that do not lead from a with_ tensor to of get no backward ops."""
    g = rg.Graph()
    a = g.placeholder((3,), rg.float64)
    b = g.placeholder((3,), rg.float64)
    loss = g.reductionSum(g.addition(g.exponent(a), g.logarithm(b)), axes=[0])
    before = len(g._ops)
    grads = g.gradients(of=loss, with_=[a])
    kinds = [op.kind for op in g._ops[before:]]
    assert "division" not in kinds  # d log(b)/db = 1/b is never built
    va = rng.random(3) + 0.5
    out = g.run(feeds={a: va, b: rng.random(3) + 0.5}, targetTensors=[grads[a]])[grads[a]]
    np.testing.assert_allclose(out, np.exp(va), rtol=1e-12)


def test_integer_paths_get_no_gradient():
    g = rg.Graph()
    table = g.placeholder((5, 2), rg.float64)
    indices = g.placeholder((3,), rg.int32)
    rows = g.gather(table, indicesTensor=indices, axis=0, batchDimensions=0)
    loss = g.reductionSum(rows, axes=[0, 1])
    grads = g.gradients(of=loss, with_=[table, indices])
    out = g.run(
        feeds={table: np.ones((5, 2)), indices: np.array([0, 0, 3], np.int32)},
        targetTensors=[grads[table], grads[indices]],
    )
    np.testing.assert_array_equal(out[grads[table]][:, 0], [2, 0, 0, 1, 0])
    assert grads[indices].dataType == rg.int32
    np.testing.assert_array_equal(out[grads[indices]], 0)
    with pytest.raises(TypeError, match="^gradients: of: .* int32"):
        g.gradients(of=indices, with_=[table])


def test_gradients_reach_variables_directly_and_through_read():
    g = rg.Graph()
    v = g.variable(np.array([1.0, 2.0]), shape=[2], dataType=rg.float64)
    loss = g.reductionSum(g.multiplication(g.square(v), g.read(v)), axes=[0])  # v³
    grads = g.gradients(of=loss, with_=[v])
    out = g.run(targetTensors=[grads[v]])[grads[v]]
    np.testing.assert_allclose(out, 3 * np.array([1.0, 2.0]) ** 2)


def test_a_tensor_used_twice_accumulates_and_unreached_targets_get_zeros():
    g = rg.Graph()
    x = g.placeholder((2, 3), rg.float64)
    unused = g.placeholder((4,), rg.float64)
    loss = g.reductionSum(g.multiplication(x, x), axes=[0, 1])
    grads = g.gradients(of=loss, with_=[x, unused])
    value = np.arange(6.0).reshape(2, 3)
    out = g.run(feeds={x: value, unused: np.ones(4)}, targetTensors=list(grads.values()))
    np.testing.assert_allclose(out[grads[x]], 2 * value)
    np.testing.assert_array_equal(out[grads[unused]], np.zeros(4))


def test_gradients_refuse_bad_arguments():
    g = rg.Graph()
    x = g.placeholder((2,), rg.float64)
    with pytest.raises(TypeError, match="^gradients: with_: expected a list"):
        g.gradients(of=x, with_=x)
    with pytest.raises(TypeError, match="^gradients: with_: expected a list of Tensors, got NoneType"):
        g.gradients(of=x, with_=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^gradients: of: expected an rnngraph Tensor"):
        g.gradients(of=np.ones(2), with_=[x])
    other = rg.Graph()
    with pytest.raises(ValueError, match="^gradients: with_: .*another Graph"):
        g.gradients(of=x, with_=[other.placeholder((2,))])
    source = g.placeholder((T, N, 4 * H), rg.float64)
    _, _, z = g.LSTM(
        source,
        recurrentWeight=g.placeholder((4 * H, H), rg.float64),
        descriptor=rg.LSTMDescriptor(training=True),
    )
    with pytest.raises(ValueError, match="zState is a saved training state"):
        g.gradients(of=z, with_=[source])


@pytest.mark.parametrize("same_as_source", [False, True])
def test_a_mask_reached_from_with_is_refused(same_as_source):
    """The gradient ops take the mask as a constant (SPEC.md section 6): a mask that depends
    on a tensor of with_ would add nothing to its gradient, so the walk refuses it."""
    g = rg.Graph()
    source = g.placeholder((T, N, H), rg.float64)
    mask = source if same_as_source else g.placeholder((T, N, H), rg.float64)
    (h,) = g.singleGateRNN(source, recurrentWeight=g.placeholder((H, H), rg.float64),
                           mask=g.multiplication(mask, 1.0))
    with pytest.raises(ValueError, match=r"^gradients: .*: mask depends on a tensor of with_"):
        g.gradients(of=h, with_=[mask])
    if not same_as_source:  # the mask out of with_'s reach: fine
        assert source in g.gradients(of=h, with_=[source])


def test_a_mask_in_with_gets_zeros_as_a_constant():
    """The mask tensor itself asked for: zeros, the gradient of a constant (SPEC.md section 6),
    while a tensor that is both the source and the mask is refused (above)."""
    g = rg.Graph()
    source, mask = (g.placeholder((T, N, H), rg.float64) for _ in range(2))
    (h,) = g.singleGateRNN(source, recurrentWeight=g.placeholder((H, H), rg.float64), mask=mask)
    grads = g.gradients(of=h, with_=[source, mask])
    assert set(grads) == {source, mask}


def test_a_deep_copied_graph_keeps_its_own_variables():
    import copy

    g = rg.Graph()
    v = g.variable(np.array([1.0, 2.0]), shape=[2], dataType=rg.float64)
    step = g.assign(v, tensor=g.addition(v, 10.0))
    twin = copy.deepcopy(g)
    twin_v, twin_step = twin._ops[0].outputs[0], twin._ops[-1]
    for _ in range(2):
        twin.run(targetOperations=[twin_step])
    np.testing.assert_array_equal(twin.run(targetTensors=[twin_v])[twin_v], [21.0, 22.0])
    np.testing.assert_array_equal(g.run(targetTensors=[v])[v], [1.0, 2.0])  # untouched
    g.run(targetOperations=[step])
    np.testing.assert_array_equal(g.run(targetTensors=[v])[v], [11.0, 12.0])


def test_returned_gradients_never_share_memory():
    """Gradients that pass through a broadcast undo unchanged (the shapes agree at run time)
    come back as arrays of their own."""
    g = rg.Graph()
    x = g.placeholder((None, 3), rg.float64)
    s = g.addition(x, 1.0)
    loss = g.reductionSum(g.multiplication(s, s), axes=[0, 1])
    grads = g.gradients(of=loss, with_=[s, x])
    out = g.run(feeds={x: np.ones((2, 3))}, targetTensors=[grads[s], grads[x]])
    assert not np.shares_memory(out[grads[s]], out[grads[x]])
    out[grads[s]][0, 0] = 99.0
    assert out[grads[x]][0, 0] == 4.0


RECURRENT_OPTIONS = [
    ("singleGateRNN", {}),
    ("singleGateRNN", {"reverse": True, "activation": rg.RNNActivation.tanh}),
    ("singleGateRNN", {"bidirectional": True, "activation": rg.RNNActivation.sigmoid}),
    ("GRU", {}),
    ("GRU", {"resetAfter": True}),
    ("GRU", {"resetGateFirst": True, "flipZ": True, "reverse": True}),
    ("GRU", {"bidirectional": True, "resetAfter": True}),
    ("LSTM", {"bidirectional": True}),
]
GATES = {"singleGateRNN": 1, "GRU": 3, "LSTM": 4}
DESCRIPTOR = {
    "singleGateRNN": rg.SingleGateRNNDescriptor,
    "GRU": rg.GRUDescriptor,
    "LSTM": rg.LSTMDescriptor,
}


@pytest.mark.parametrize(("cell", "options"), RECURRENT_OPTIONS,
                         ids=[f"{c}-{'-'.join(o) or 'default'}" for c, o in RECURRENT_OPTIONS])
def test_recurrent_ops_through_gradients_match_central_differences(cell, options, rng):
    """Graph.gradients through each recurrent forward op (every differentiable input: source,
    recurrentWeight, inputWeight, bias, initState, and GRU's secondaryBias) and an op after it,
    against central differences; the recurrent op's rule is its gradient kernel."""
    D = 2 if options.get("bidirectional") else 1
    G = GATES[cell]
    inputs = {
        "source": rng.standard_normal((T, N, I)) * 0.5,
        "recurrentWeight": rng.standard_normal((2, G * H, H) if D == 2 else (G * H, H)) * 0.5,
        "inputWeight": rng.standard_normal((D * G * H, I)) * 0.5,
        "bias": rng.standard_normal(D * G * H) * 0.5,
        "initState": rng.standard_normal((N, D * H)) * 0.5,
    }
    if cell == "GRU":
        inputs["secondaryBias"] = rng.standard_normal(D * H) * 0.5
    descriptor = DESCRIPTOR[cell](**options)

    def build(g, t):
        outputs = getattr(g, cell)(t["source"], descriptor=descriptor,
                                   **{k: v for k, v in t.items() if k != "source"})
        return g.tanh(outputs[0])  # a loss that is not linear in h

    assert fd_check(build, inputs, rng, where=f"{cell} {options}") < FD_BOUND
