"""``Graph.compile`` and ``Executable.run``: a compiled run returns what ``Graph.run`` returns
with the same feeds, bit for bit, and what the NumPy reference gives, for every cell on the
one-op path (a recurrent op reading only feeds and constants: its prepared call made with the
feeds as they are) and on the general path (several ops, variables and assigns, feeds that
need converting); and every misuse raises an error naming compile or Executable.run."""

from __future__ import annotations

import pickle
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import rnngraph as rg
from rnngraph.ops import recurrent
from toolkit import Case, assert_close, draw_inputs, reference

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
from char_lstm import CharLSTM, Sizes

WEIGHTS = ("recurrentWeight", "inputWeight", "bias", "peephole", "secondaryBias")
# cell, case id, training: every cell, both directions, options that change the math
KINDS = [("singleGateRNN", "fwd", False), ("singleGateRNN", "bi", True), ("LSTM", "fwd", False),
         ("LSTM", "reverse-forgetGateLast", True), ("LSTM", "bi", False),
         ("GRU", "fwd", False), ("GRU", "bi-resetAfter", True), ("GRU", "fwd-resetAfter-flipZ", False)]


def decoder_step(case, x, training=False):
    """The op of ``case`` with its weights as constants and the rest as placeholders:
    (graph, placeholders by label, the op's outputs)."""
    g = rg.Graph()
    dtype = rg.float64 if x["source"].dtype == np.float64 else rg.float32
    tensors = {k: g.constant(v, name=k) if k in WEIGHTS
               else g.placeholder(shape=v.shape, dataType=dtype, name=k) for k, v in x.items()}
    inputs = {k: v for k, v in tensors.items() if k != "source"}
    outputs = getattr(g, case.cell)(tensors["source"], **inputs,
                                    descriptor=case.descriptor(training=training))
    return g, {k: t for k, t in tensors.items() if k not in WEIGHTS}, outputs


@pytest.mark.parametrize("cell,text,training", KINDS,
                         ids=[f"{c}-{t}" + "-training" * tr for c, t, tr in KINDS])
def test_one_op_runs_match_graph_run_and_the_reference(cell, text, training, rng):
    case = Case.parse(cell, text).but(T=4, N=3, I=5, H=6).with_all_inputs()
    x = draw_inputs(case, rng)
    g, placeholders, outputs = decoder_step(case, x, training)
    exe = g.compile(feeds=list(placeholders.values()), targetTensors=outputs)
    inputs = [x[k] for k in placeholders]
    runs = [exe.run(inputs) for _ in range(3)]  # the first prepares, the others reuse it
    assert exe._direct is not None, "the one-op path was taken"
    expected = g.run(feeds={t: x[k] for k, t in placeholders.items()}, targetTensors=outputs)
    for run in runs:
        assert len(run) == len(outputs)
        for got, tensor in zip(run, outputs):
            assert np.array_equal(got, expected[tensor]), tensor.name
            assert got.flags.writeable and got.shape == tensor.shape
    assert_close(runs[0][0], reference(case, x)["h"], "float64_medium", "against the reference")


def test_a_run_reads_new_feeds_each_call(rng):
    case = Case.parse("LSTM", "fwd").but(T=2, N=3, I=4, H=5).with_all_inputs()
    first, second = draw_inputs(case, rng), draw_inputs(case, rng)
    second.update({k: first[k] for k in WEIGHTS if k in first})  # the constants are first's
    g, placeholders, outputs = decoder_step(case, first)
    exe = g.compile(feeds=list(placeholders.values()), targetTensors=[outputs[0]])
    for x in (first, second, first):
        (h,) = exe.run([x[k] for k in placeholders])
        assert_close(h, reference(case, x)["h"], "float64_medium", "against the reference")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_feeds_that_need_converting_take_the_general_path(dtype, rng):
    case = Case.parse("GRU", "fwd").but(T=3, N=2, I=4, H=5).with_all_inputs()
    x = {k: v.astype(dtype) for k, v in draw_inputs(case, rng).items()}
    g, placeholders, (h,) = decoder_step(case, x)
    exe = g.compile(feeds=list(placeholders.values()), targetTensors=[h])
    inputs = [x[k] for k in placeholders]
    (expected,) = exe.run(inputs)
    source = list(placeholders).index("source")

    def with_source(value):
        return [value if i == source else v for i, v in enumerate(inputs)]

    strided = np.ascontiguousarray(inputs[source].transpose(1, 0, 2)).transpose(1, 0, 2)
    assert not strided.flags.c_contiguous
    for variant in (strided, inputs[source].tolist()):
        assert np.array_equal(exe.run(with_source(variant))[0], expected)
    other = np.float64 if dtype == np.float32 else np.float32
    if dtype == np.float32:  # float64 values fed to float32: converted, with a warning
        with pytest.warns(UserWarning, match="Executable.run: feed for 'source': float64"):
            (got,) = exe.run(with_source(inputs[source].astype(other)))
        assert np.array_equal(got, expected)
    else:  # float32 values fed to float64: widened, quietly
        narrow = inputs[source].astype(other)
        (got,) = exe.run(with_source(narrow))
        assert np.array_equal(got, exe.run(with_source(narrow.astype(dtype)))[0])


def test_a_placeholder_of_open_dimensions_compiled_for_a_shape(rng):
    g = rg.Graph()
    x = g.placeholder((None, None, 4), rg.float64, name="x")
    R = g.constant(rng.standard_normal((9, 3)))
    W = g.constant(rng.standard_normal((9, 4)))
    (h,) = g.GRU(x, recurrentWeight=R, inputWeight=W)
    exe = g.compile(feeds={x: (5, 2, 4)}, targetTensors=[h])
    value = rng.standard_normal((5, 2, 4))
    (got,) = exe.run([value])
    assert np.array_equal(got, g.run(feeds={x: value}, targetTensors=[h])[h])
    with pytest.raises(ValueError, match=r"Executable.run: feed for 'x': expected shape "
                                         r"\[5, 2, 4\] \(as compiled\), got \[6, 2, 4\]"):
        exe.run([rng.standard_normal((6, 2, 4))])


def test_a_training_step_with_assigns_matches_graph_run():
    sizes = Sizes(vocab=7, embed=3, hidden=4, T=5, N=2)
    tokens = np.random.default_rng(3).integers(0, sizes.vocab, (4, sizes.T + 1, sizes.N))
    tokens = tokens.astype(np.int32)
    ran, compiled = CharLSTM(sizes, seed=1, dataType=rg.float64), CharLSTM(sizes, seed=1,
                                                                           dataType=rg.float64)
    step = compiled.graph.compile(feeds=[compiled.inputs, compiled.targets],
                                  targetTensors=[compiled.loss],
                                  targetOperations=compiled.updates)
    for batch in tokens:
        expected = ran.train_step(batch[:-1], batch[1:])
        (loss,) = step.run([batch[:-1], batch[1:]])
        assert float(loss) == expected
    for name, value in ran.parameters().items():
        assert np.array_equal(compiled.parameters()[name], value), name


def test_a_multi_op_graph_and_its_targets_in_order(rng):
    g = rg.Graph()
    x = g.placeholder((3, 2, 4), rg.float64, name="x")
    R = g.placeholder((3, 3), rg.float64, name="R")
    W = g.constant(rng.standard_normal((3, 4)))
    (h,) = g.singleGateRNN(x, recurrentWeight=R, inputWeight=W)
    loss = g.reductionSum(g.square(h), axes=[0, 1, 2])
    grads = g.gradients(of=loss, with_=[x, R])
    targets = [grads[R], loss, h, x]  # x: a placeholder target comes back as a copy
    exe = g.compile(feeds=[R, x], targetTensors=targets)
    values = [rng.standard_normal((3, 3)), rng.standard_normal((3, 2, 4))]
    got = exe.run(values)
    expected = g.run(feeds={R: values[0], x: values[1]}, targetTensors=targets)
    assert exe._direct is None
    for array, tensor in zip(got, targets):
        assert np.array_equal(array, expected[tensor]), tensor.name
    assert got[3] is not values[1] and np.array_equal(got[3], values[1])


def test_runs_from_four_threads_match_one(rng):
    case = Case.parse("LSTM", "bi").but(T=5, N=4, I=6, H=7).with_all_inputs()
    xs = [draw_inputs(case, rng) for _ in range(4)]
    for x in xs[1:]:
        x.update({k: xs[0][k] for k in WEIGHTS if k in x})
    g, placeholders, outputs = decoder_step(case, xs[0])
    exe = g.compile(feeds=list(placeholders.values()), targetTensors=outputs)
    serial = [exe.run([x[k] for k in placeholders]) for x in xs]
    results: dict[int, list] = {}

    def worker(i: int) -> None:
        for _ in range(20):
            results[i] = exe.run([xs[i][k] for k in placeholders])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        for got, expected in zip(results[i], serial[i]):
            assert np.array_equal(got, expected)


def test_the_executable_keeps_its_graph_and_ignores_later_ops(rng):
    g = rg.Graph()
    x = g.placeholder((2, 3), rg.float32, name="x")
    y = g.multiplication(x, x)
    exe = g.compile(feeds=[x], targetTensors=[y])
    g.addition(y, y)  # a later op
    del g
    value = rng.standard_normal((2, 3)).astype(np.float32)
    assert np.array_equal(exe.run([value])[0], value * value)
    assert exe.feedTensors == [x] and exe.targetTensors == [y]
    assert "Executable(feeds=['x' [2, 3]]" in repr(exe)
    with pytest.raises(TypeError, match="an Executable"):
        pickle.dumps(exe)


def test_compile_refuses_what_it_cannot_run(rng):
    g, other = rg.Graph(), rg.Graph()
    x = g.placeholder((2, 3), rg.float32, name="x")
    y = g.placeholder((None, 3), rg.float32, name="y")
    z = g.addition(x, y)
    c = g.constant(np.ones((2, 3), np.float32))
    elsewhere = other.placeholder((2, 3), rg.float32, name="w")
    cases = [
        ({"feeds": [x], "targetTensors": [z]}, ValueError, "compile: feeds: placeholder 'y' needs a feed"),
        ({"feeds": [x, y], "targetTensors": [z]}, ValueError, r"'y' has shape \[\?, 3\]: give its full"),
        ({"feeds": {x: None, y: (2, 4)}, "targetTensors": [z]}, ValueError, r"\[2, 4\] does not fit"),
        ({"feeds": {x: None, y: (2, -1)}, "targetTensors": [z]}, ValueError, "non-negative ints"),
        ({"feeds": {x: None, y: 3}, "targetTensors": [z]}, TypeError, "a sequence of sizes"),
        # a shape no array can hold, refused as placeholder() refuses it
        ({"feeds": {x: None, y: (2**62, 3)}, "targetTensors": [z]}, MemoryError,
         r"compile: feeds: shape for 'y': \[4611686018427387904, 3\]: more bytes than any array"),
        ({"feeds": [x, x], "targetTensors": [x]}, ValueError, "'x' is given twice"),
        ({"feeds": [c], "targetTensors": [z]}, ValueError, "is not a placeholder"),
        ({"feeds": [elsewhere], "targetTensors": [elsewhere]}, ValueError, "another Graph"),
        ({"feeds": x, "targetTensors": [x]}, TypeError, "compile: feeds: expected a list"),
        ({"feeds": [x], "targetTensors": x}, TypeError, "compile: targetTensors: expected a list"),
        ({"feeds": [x], "targetTensors": None}, TypeError, "compile: targetTensors"),
        ({"feeds": [x], "targetTensors": [x], "targetOperations": [z.op]}, ValueError,
         "compile: targetOperations: .* only assign operations"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            g.compile(**kwargs)


def test_run_refuses_bad_inputs(rng):
    g = rg.Graph()
    x = g.placeholder((2, 3), rg.float32, name="x")
    exe = g.compile(feeds=[x], targetTensors=[g.multiplication(x, x)])
    good = np.ones((2, 3), np.float32)
    cases = [
        ((good,), TypeError, "Executable.run: inputs: expected a list of arrays"),
        ([good, good], ValueError, r"expected one array for each of \['x'\], got 2 arrays"),
        ([np.ones((3, 2), np.float32)], ValueError, "Executable.run: feed for 'x': expected shape"),
        ([x], TypeError, "Executable.run: feed for 'x': expected an array, got a symbolic Tensor"),
        ([np.array([["a"] * 3] * 2)], TypeError, "Executable.run: feed for 'x': expected real"),
    ]
    for inputs, error, message in cases[1:]:
        with pytest.raises(error, match=message):
            exe.run(inputs)
    with pytest.raises(TypeError, match=cases[0][2]):
        exe.run(good)


def test_the_one_op_path_names_the_feed_it_refuses(rng):
    case = Case.parse("LSTM", "fwd").but(T=2, N=3, I=4, H=5).with_all_inputs()
    x = draw_inputs(case, rng)
    g, placeholders, outputs = decoder_step(case, x)
    exe = g.compile(feeds=list(placeholders.values()), targetTensors=[outputs[0]])
    inputs = [x[k] for k in placeholders]
    exe.run(inputs)
    bad = list(inputs)
    bad[0] = np.zeros((9, 3, 4))  # a float64 array of the wrong shape: the general path names it
    with pytest.raises(ValueError, match="Executable.run: feed for 'source': expected shape"):
        exe.run(bad)
    bad[0] = np.full((2, 3, 4), np.nan)  # NaN: computed, as Graph.run computes it
    (h,) = exe.run(bad)
    assert np.isnan(h).all()


def test_prepare_forward_refuses_labels_it_was_not_given(rng):
    core = recurrent._core
    options = core.LSTMOptions()
    arrays = {"source": rng.standard_normal((2, 3, 4)), "recurrentWeight": rng.standard_normal((20, 5)),
              "inputWeight": rng.standard_normal((20, 4))}
    with pytest.raises(ValueError, match="LSTM: prepare_forward: run_labels: bias is not one"):
        core.prepare_forward(options, arrays, ["source", "bias"])
    with pytest.raises(TypeError, match="run_labels: expected str"):
        core.prepare_forward(options, arrays, [1])
    prepared = core.prepare_forward(options, arrays, ["source"])
    assert prepared.run_labels == "source"
    with pytest.raises(ValueError, match=r"LSTM: prepared call: expected one array for each of \(source\), got 2 arrays"):
        prepared.run(arrays["source"], arrays["source"])
    with pytest.raises(ValueError, match=r"LSTM: source: expected shape \[2, 3, 4\]"):
        prepared.run(np.zeros((3, 3, 4)))
    with pytest.raises(TypeError, match="LSTM: source: expected dtype float64"):
        prepared.run(arrays["source"].astype(np.float32))
    h, c, z = prepared.run(arrays["source"])
    expected = core.rnn_forward(options, arrays)
    assert np.array_equal(h, expected[0]) and np.array_equal(c, expected[1]) and z is None


def test_prepare_forward_refuses_packed_weights_it_cannot_use(rng):
    core = recurrent._core
    options = core.LSTMOptions()
    arrays = {"source": rng.standard_normal((2, 3, 4)), "recurrentWeight": rng.standard_normal((20, 5)),
              "inputWeight": rng.standard_normal((20, 4))}
    with pytest.raises(TypeError, match="LSTM: prepare_forward: packed: expected weights from "
                                        "pack_forward_weights or None"):
        core.prepare_forward(options, arrays, ["source"], packed=5)
    packed = core.pack_forward_weights(options, arrays["recurrentWeight"], arrays["inputWeight"])
    for label in ("recurrentWeight", "inputWeight"):  # packed: they cannot change per run
        with pytest.raises(ValueError, match=f"LSTM: prepare_forward: run_labels: {label} is packed"):
            core.prepare_forward(options, arrays, ["source", label], packed=packed)


@pytest.mark.parametrize("call", ["Graph.run", "Executable.run"])
def test_a_run_holds_no_reference_to_its_inputs_once_it_returns(call, rng):
    """The op's prepared call keeps its constants, not the first run's feeds (nor the
    array a feed is a view of): a dataset fed slice by slice is freed when dropped."""
    import gc
    import weakref

    case = Case.parse("LSTM", "fwd").but(T=3, N=2, I=4, H=5).with_all_inputs()
    x = draw_inputs(case, rng)
    g, placeholders, outputs = decoder_step(case, x)
    exe = g.compile(feeds=list(placeholders.values()), targetTensors=outputs)
    dataset = np.stack([x["source"]] * 4)
    freed = weakref.ref(dataset)
    for i in range(3):
        feeds = [dataset[i] if k == "source" else x[k] for k in placeholders]
        if call == "Graph.run":
            g.run(feeds=dict(zip(placeholders.values(), feeds)), targetTensors=outputs)
        else:
            exe.run(feeds)
    del dataset, feeds
    gc.collect()
    assert freed() is None, f"{call} kept its first feed alive"


def test_a_target_listed_twice_gives_two_arrays(rng):
    case = Case.parse("GRU", "fwd").but(T=3, N=2, I=4, H=5).with_all_inputs()
    x = draw_inputs(case, rng)
    g, placeholders, outputs = decoder_step(case, x)
    y = outputs[0]
    both = g.compile(feeds=list(placeholders.values()), targetTensors=[y, y])
    twice = g.compile(feeds=list(placeholders.values()), targetTensors=[y, g.negative(y), y])
    inputs = [x[k] for k in placeholders]
    for exe in (both, twice):
        for _ in range(2):  # the first run prepares the op; the second takes the one-op path
            run = exe.run(inputs)
            first, again = run[0], run[-1]
            assert first is not again and np.array_equal(first, again)
            first += 1
            assert not np.array_equal(first, again)


def test_a_deep_copy_runs_on_its_own_constants(rng):
    """A copied Graph's recurrent op prepares its own call (on the copy's constants), and the
    copy's constants stay read-only, as the original's are."""
    import copy

    case = Case.parse("GRU", "fwd").but(T=3, N=2, I=4, H=5).with_all_inputs()
    x = draw_inputs(case, rng)
    g, placeholders, outputs = decoder_step(case, x)
    feeds = {t: x[k] for k, t in placeholders.items()}
    expected = g.run(feeds=feeds, targetTensors=outputs)  # the original prepared first
    g2 = copy.deepcopy(g)
    op2 = next(op for op in g2._ops if op.kind == "GRU")
    original_op = outputs[0].op
    assert original_op.compute.prepared_call.prepared is not None
    assert op2.compute.prepared_call.prepared is None, "the copy prepares its own call"
    bias = next(op for op in g2._ops if op.kind == "constant" and op.name == "bias")
    assert not bias.attrs["value"].flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        bias.attrs["value"][:] = 0
    outputs2 = [op2.outputs[t.index] for t in outputs]
    copies = {o.name: o.outputs[0] for o in g2._ops if o.kind == "placeholder"}
    got = g2.run(feeds={copies[t.op.name]: x[k] for k, t in placeholders.items()},
                 targetTensors=outputs2)
    assert op2.compute.prepared_call.prepared is not None
    for t, t2 in zip(outputs, outputs2):
        assert np.array_equal(got[t2], expected[t])
