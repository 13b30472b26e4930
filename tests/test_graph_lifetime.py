"""A Graph is freed by reference counting alone: nothing it owns refers back to it (a Tensor
refers to its Graph and op weakly), so ``del g`` frees the Graph, its ops, its constants
and the weights packed from them at once, with the cyclic collector off. While the Graph
lives, ``tensor.op``, ``tensor.graph`` and ``op.outputs`` work; once it is gone, using one
of its tensors is a clear error."""

from __future__ import annotations

import copy
import gc
import re
import weakref

import numpy as np
import pytest

import rnngraph as rg
from toolkit import CELLS, Case, draw_inputs
from toolkit.placeholders import feeds, on_placeholders

BUILDS = ["constants", "constants+gradient-op", "Graph.gradients-inference",
          "Graph.gradients-training"]


@pytest.fixture
def no_cycle_collector():
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _ops_reached(targets):
    """Every op the targets depend on, through the public op.inputs and tensor.op."""
    seen, stack = {}, [t.op for t in targets]
    while stack:
        op = stack.pop()
        if id(op) not in seen:
            seen[id(op)] = op
            stack.extend(t.op for t in op.inputs.values() if t is not None)
    return list(seen.values())


def _build_and_run(cell, build, rng):
    """A graph of ``cell`` with constant weights (packed at the first run), run twice;
    returns the graph and weak references to it, its ops, their compute functions and its
    constants' arrays."""
    case = Case(cell, T=3, N=2, I=5, H=6, bias=True, initState="[N,DH]")
    x = draw_inputs(case, rng)
    g = rg.Graph()
    source = g.placeholder(shape=x["source"].shape, dataType=rg.float64, name="x")
    weights = {label: g.constant(value, name=label) for label, value in x.items()
               if label != "source"}
    training = build in ("constants+gradient-op", "Graph.gradients-training")
    outputs = getattr(g, cell)(source, **weights, descriptor=case.descriptor(training=training))
    targets = [outputs[0]]
    if build == "constants+gradient-op":
        saved = {"LSTM": {"cellOutputFwd": outputs[1]}, "GRU": {"outputFwd": outputs[0]}}
        dy = g.constant(np.ones(outputs[0].shape))
        targets += getattr(g, f"{cell}Gradients")(
            source, **weights, sourceGradient=dy, zState=outputs[-1], **saved.get(cell, {}),
            descriptor=case.descriptor())
    elif build.startswith("Graph.gradients"):
        grads = g.gradients(of=outputs[0], with_=[source, *weights.values()])
        targets += grads.values()
    for _ in range(2):
        out = g.run(feeds={source: x["source"]}, targetTensors=targets)
        assert all(np.all(np.isfinite(out[t])) for t in targets)
    ops = _ops_reached(targets)
    assert len(ops) >= len(weights) + 2
    refs = [weakref.ref(g), *(weakref.ref(op) for op in ops)]
    refs += [weakref.ref(op.compute) for op in ops if op.compute is not None]
    refs += [weakref.ref(op.attrs["value"]) for op in ops if op.kind == "constant"]
    return g, refs


@pytest.mark.parametrize("build", BUILDS)
@pytest.mark.parametrize("cell", CELLS)
def test_deleted_graphs_are_freed_at_once_without_the_cycle_collector(
        cell, build, rng, no_cycle_collector):
    for _ in range(5):
        g, refs = _build_and_run(cell, build, rng)
        assert all(ref() is not None for ref in refs)
        del g
        alive = [ref() for ref in refs if ref() is not None]
        assert alive == [], f"still alive after del: {alive[:3]}"
    assert not gc.isenabled()


def test_what_a_run_returned_stays_valid_when_the_graph_is_freed(rng, no_cycle_collector):
    """The arrays a run returns belong to the caller; the Graph's own memory goes with it."""
    g, refs = _build_and_run("LSTM", "constants", rng)
    x = g.placeholder(shape=(3,), dataType=rg.float32, name="x")
    out = g.run(feeds={x: np.arange(3.0, dtype=np.float32)}, targetTensors=[x])[x]
    del g
    assert all(ref() is None for ref in refs)
    np.testing.assert_array_equal(out, np.arange(3.0, dtype=np.float32))


def test_tensors_and_ops_work_while_the_graph_lives(rng):
    case = Case.parse("singleGateRNN", "fwd-act=tanh-h0-H4")
    g, ph, (h, z) = on_placeholders(case, dataType=rg.float64,
                                    descriptor=case.descriptor(training=True), name="cell")
    assert h.graph is g and z.graph is g and ph["source"].graph is g
    op = h.op
    assert op is z.op and op.kind == "singleGateRNN" and op.name == "cell"
    assert op.outputs == [h, z] and [t.index for t in op.outputs] == [0, 1]
    assert op.inputs["source"] is ph["source"] and ph["source"].op.kind == "placeholder"
    out = h.graph.run(feeds=feeds(ph, draw_inputs(case, rng)), targetTensors=[h])
    assert out[h].shape == (case.T, case.N, case.H)


def test_tensors_of_a_deleted_graph_raise_a_clear_error(no_cycle_collector):
    g = rg.Graph()
    x = g.placeholder(shape=(3, 2, 4), dataType=rg.float32, name="x")
    (h,) = g.singleGateRNN(x, recurrentWeight=np.eye(4, dtype=np.float32))
    del g
    gone = re.escape("its Graph was deleted")
    for tensor in (x, h):
        with pytest.raises(ReferenceError, match=gone):
            tensor.graph  # noqa: B018
        with pytest.raises(ReferenceError, match=gone):
            tensor.op  # noqa: B018
    assert h.shape == (3, 2, 4) and h.dataType == rg.float32 and "Tensor(" in repr(h)
    other = rg.Graph()
    with pytest.raises(ValueError, match="singleGateRNN: source: tensor 'x' belongs to a Graph "
                                         "that was deleted"):
        other.singleGateRNN(x, recurrentWeight=np.eye(4, dtype=np.float32))
    with pytest.raises(ValueError, match="run: targetTensors: .*deleted"):
        other.run(feeds={}, targetTensors=[h])
    doomed = rg.Graph()
    v = doomed.variable(np.zeros(2), shape=[2], dataType=rg.float64)
    step = doomed.assign(v, doomed.addition(v, 1.0))
    del doomed, v
    with pytest.raises(ValueError, match="run: targetOperations: .* belongs to a Graph that "
                                         "was deleted"):
        other.run(targetOperations=[step])


def test_a_deep_copy_is_a_graph_of_its_own(rng, no_cycle_collector):
    """Its tensors refer to the copy, it runs after the original is gone, and it is freed
    at once in turn."""
    g, refs = _build_and_run("GRU", "Graph.gradients-training", rng)
    x = g.placeholder(shape=(3, 2, 4), dataType=rg.float32, name="x")
    (h,) = g.singleGateRNN(x, recurrentWeight=np.eye(4, dtype=np.float32), name="cell")
    g2, x2, h2 = copy.deepcopy((g, x, h))
    assert h2.graph is g2 and h2.op is not h.op and h2.op.outputs == [h2]
    assert h2.op.inputs["source"] is x2 and h2.name == h.name and h2.op.name == "cell"
    feed = rng.standard_normal((3, 2, 4)).astype(np.float32)
    expected = g.run(feeds={x: feed}, targetTensors=[h])[h]
    del g
    assert refs[0]() is None  # (the copy shares the compute functions, as deepcopy does)
    np.testing.assert_array_equal(g2.run(feeds={x2: feed}, targetTensors=[h2])[h2], expected)
    copied = weakref.ref(g2)
    del g2
    assert copied() is None


def test_a_tensor_copied_without_its_graph_keeps_the_copied_graph(rng):
    """copy.deepcopy(tensor), or of a feeds dict, copies the Graph too, which nothing else
    holds: the copied tensor keeps it (a usable tensor, not one whose Graph is already gone),
    until the copy itself goes. A Graph copied first is held by the caller, as before."""
    g = rg.Graph()
    x = g.placeholder(shape=(3, 2, 4), dataType=rg.float32, name="x")
    (h,) = g.singleGateRNN(x, recurrentWeight=np.eye(4, dtype=np.float32), name="cell")
    feed = rng.standard_normal((3, 2, 4)).astype(np.float32)
    expected = g.run(feeds={x: feed}, targetTensors=[h])[h]
    h2 = copy.deepcopy(h)
    g2, x2 = h2.graph, h2.op.inputs["source"]
    assert g2 is not g and x2.graph is g2 and x2.name == "x"
    np.testing.assert_array_equal(g2.run(feeds={x2: feed}, targetTensors=[h2])[h2], expected)
    copied_feeds = copy.deepcopy({x: feed})
    assert next(iter(copied_feeds)).graph is not g
    g3, x3 = copy.deepcopy((g, x))
    assert x3.graph is g3 and x3._owner is None  # held weakly: freed with g3 at once
    copied = weakref.ref(g2)
    del g2, h2, x2
    gc.collect()
    assert copied() is None


def test_a_graph_its_tensors_and_ops_refuse_pickle_by_name():
    """Their ops compute with closures, which pickle cannot carry: a TypeError that says what
    to do, not pickle's own message about a weak reference."""
    import pickle

    g = rg.Graph()
    x = g.placeholder(shape=(3, 2, 4), dataType=rg.float32, name="x")
    (h,) = g.singleGateRNN(x, recurrentWeight=np.eye(4, dtype=np.float32), name="cell")
    for thing, what in [(g, "a Graph"), (h, "a Tensor ('cell/h')"),
                        (h.op, "an Operation ('cell')")]:
        with pytest.raises(TypeError, match=re.escape(f"rnngraph: {what} cannot be pickled") +
                           ".*build the Graph in the process that runs it"):
            pickle.dumps(thing)
    with pytest.raises(TypeError, match=r"copy\.deepcopy"):
        copy.copy(g)
    assert copy.copy(h) is h
    descriptor = rg.SingleGateRNNDescriptor(reverse=True)  # what may travel between processes
    assert pickle.loads(pickle.dumps(descriptor)).reverse
