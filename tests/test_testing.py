"""rnngraph.testing: check_gradients accepts correct gradients (Graph.gradients through an
LSTM, a GRU, variables; hand-wired gradient ops given as ``analytic=``) and catches wrong
ones (a gradient op fed another forward's zState, one wrong element, a tolerance too tight)
with a table; bad arguments raise errors naming the function and the argument. The array
helpers compare Graph outputs with readable messages. docs/testing.md's example test file
runs here too."""

from __future__ import annotations

import doctest
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import rnngraph as rg
import rnngraph.testing as rt
from rnngraph.testing import assert_allclose, assert_outputs_close, check_gradients

ROOT = Path(__file__).resolve().parents[1]
T, N, I, H, C = 4, 3, 5, 4, 6


def lstm_classifier(variables: bool = False, dtype: rg.DataType = rg.float64):
    """gather-free classifier: x → LSTM → matmul head → softMaxCrossEntropy(mean).
    With ``variables`` the weights are variables, else placeholders."""
    rng = np.random.default_rng(1)
    values = {"R": 0.5 * rng.standard_normal((4 * H, H)), "W": 0.5 * rng.standard_normal((4 * H, I)),
              "b": 0.1 * rng.standard_normal(4 * H), "head": rng.standard_normal((H, C))}
    g = rg.Graph()
    x = g.placeholder((T, N, I), dtype, name="x")
    labels = g.placeholder((T * N,), rg.int32, name="labels")
    if variables:
        p = {k: g.variable(v, shape=v.shape, dataType=dtype, name=k) for k, v in values.items()}
    else:
        p = {k: g.placeholder(v.shape, dtype, name=k) for k, v in values.items()}
    h, = g.LSTM(x, recurrentWeight=p["R"], inputWeight=p["W"], bias=p["b"])
    logits = g.matrixMultiplication(primary=g.reshape(h, shape=[T * N, H]), secondary=p["head"])
    loss = g.softMaxCrossEntropy(logits, labels=g.oneHot(labels, depth=C, dataType=dtype),
                                 axis=1, reuctionType=rg.LossReductionType.mean, name="loss")
    feeds = {x: rng.standard_normal((T, N, I)), labels: rng.integers(0, C, T * N)}
    if not variables:
        feeds.update({p[k]: v for k, v in values.items()})
    return g, loss, x, p, feeds


# -- correct gradients pass --------------------------------------------------------------------

def test_lstm_matmul_cross_entropy_passes():
    g, loss, x, p, feeds = lstm_classifier()
    wanted = [x, *p.values()]
    errors = check_gradients(g, loss, wanted, feeds)
    assert list(errors) == wanted
    assert all(0 <= e < 1e-5 for e in errors.values()), errors
    # a second check reuses the gradients Graph.gradients recorded and gives the same numbers
    assert check_gradients(g, loss, wanted, feeds) == errors


def test_gru_passes_with_a_single_tensor_and_per_element_only():
    rng = np.random.default_rng(2)
    g = rg.Graph()
    x = g.placeholder((T, N, I), rg.float64, name="x")
    R = g.placeholder((3 * H, H), rg.float64, name="R")
    W = g.placeholder((3 * H, I), rg.float64, name="W")
    h0 = g.placeholder((N, H), rg.float64, name="h0")
    d = rg.GRUDescriptor(resetAfter=True)
    h, = g.GRU(x, recurrentWeight=R, inputWeight=W, initState=h0, descriptor=d)
    loss = g.reductionSum(g.multiplication(h, rng.standard_normal((T, N, H))), axes=[0, 1, 2])
    feeds = {x: rng.standard_normal((T, N, I)), R: 0.5 * rng.standard_normal((3 * H, H)),
             W: 0.5 * rng.standard_normal((3 * H, I)), h0: rng.standard_normal((N, H))}
    errors = check_gradients(g, loss, [x, R, W, h0], feeds, seed=7)
    assert set(errors) == {x, R, W, h0} and max(errors.values()) < 1e-5
    assert check_gradients(g, loss, R, feeds, directions=0, per_element_limit=48)[R] < 1e-5
    # of need not be a scalar: sum(h) is differentiated
    assert check_gradients(g, h, [R], feeds)[R] < 1e-5


def test_variables_pass_and_are_restored_even_when_the_check_fails():
    g, loss, x, p, feeds = lstm_classifier(variables=True)
    before = g.run(targetTensors=list(p.values()))
    ops = len(g._ops)
    errors = check_gradients(g, loss, [x, *p.values()], feeds)
    assert max(errors.values()) < 1e-5
    after = g.run(targetTensors=list(p.values()))
    for v in p.values():
        np.testing.assert_array_equal(after[v], before[v])  # bit for bit
    grown = len(g._ops)
    assert grown > ops  # the backward ops, and a placeholder + assign per variable
    with pytest.raises(AssertionError, match="check_gradients: .* exceed the tolerance"):
        check_gradients(g, loss, [x, *p.values()], feeds, rtol=1e-15, atol=0.0)
    after = g.run(targetTensors=list(p.values()))
    for v in p.values():
        np.testing.assert_array_equal(after[v], before[v])
    assert len(g._ops) == grown  # a second check of the same with_ adds no ops
    assert g.run(feeds=feeds, targetTensors=[loss])[loss].shape == ()


# -- wrong gradients are caught ----------------------------------------------------------------

def hand_wired_lstm(wrong_zstate: bool):
    """sum(h ⊙ S) of an LSTM, and its gradient wired by hand with LSTMGradients: from the
    forward op's own zState and cell sequence, or (``wrong_zstate``) from those of a second
    LSTM that runs on another input."""
    rng = np.random.default_rng(3)
    g = rg.Graph()
    x = g.placeholder((T, N, I), rg.float64, name="x")
    other = g.placeholder((T, N, I), rg.float64, name="other_x")
    R = g.placeholder((4 * H, H), rg.float64, name="R")
    W = g.placeholder((4 * H, I), rg.float64, name="W")
    S = rng.standard_normal((T, N, H))
    d = rg.LSTMDescriptor(training=True)
    h, c, z = g.LSTM(x, recurrentWeight=R, inputWeight=W, descriptor=d, name="fwd")
    _, c2, z2 = g.LSTM(other, recurrentWeight=R, inputWeight=W, descriptor=d, name="fwd2")
    loss = g.reductionSum(g.multiplication(h, S), axes=[0, 1, 2], name="loss")
    zState, cell = (z2, c2) if wrong_zstate else (z, c)
    dx, dR, dW = g.LSTMGradients(x, recurrentWeight=R, sourceGradient=S, zState=zState,
                                 cellOutputFwd=cell, inputWeight=W, descriptor=d)
    feeds = {x: rng.standard_normal((T, N, I)), other: rng.standard_normal((T, N, I)),
             R: 0.5 * rng.standard_normal((4 * H, H)), W: 0.5 * rng.standard_normal((4 * H, I))}
    return g, loss, {x: dx, R: dR, W: dW}, feeds


def test_hand_wired_gradient_op_passes_when_wired_right():
    g, loss, analytic, feeds = hand_wired_lstm(wrong_zstate=False)
    errors = check_gradients(g, loss, list(analytic), feeds, analytic=analytic)
    assert max(errors.values()) < 1e-5
    # Graph.gradients agrees on the same graph
    assert max(check_gradients(g, loss, list(analytic), feeds).values()) < 1e-5


def test_gradient_op_fed_another_forwards_zstate_is_caught():
    with pytest.warns(UserWarning, match="LSTMGradients: source"):
        g, loss, analytic, feeds = hand_wired_lstm(wrong_zstate=True)
    # Graph.gradients, which wires the forward op's own zState, is right ...
    assert max(check_gradients(g, loss, list(analytic), feeds).values()) < 1e-5
    # ... the hand-wired op is not, and the table says so for every tensor
    with pytest.raises(AssertionError) as caught:
        check_gradients(g, loss, list(analytic), feeds, analytic=analytic)
    message = str(caught.value)
    assert message.startswith("check_gradients: 6 of 6 checks of the gradient of sum(loss) "
                              "exceed the tolerance (R, W, x)")
    header = message.splitlines()[2].split()
    assert header[:5] == ["tensor", "shape", "method", "worst", "error"]
    rows = {tuple(line.split()[:2]) for line in message.splitlines()[4:]}
    assert rows == {("x", "[4,"), ("R", "[16,"), ("W", "[16,")}
    assert "FAIL" in message and "ok" not in message.split()
    assert "3 random directions" in message and "64 elements" in message


def test_one_wrong_element_is_caught_and_located():
    g, loss, analytic, feeds = hand_wired_lstm(wrong_zstate=False)
    R = list(analytic)[1]
    nudge = np.zeros((4 * H, H))
    nudge[5, 2] = 1e-3
    wrong = dict(analytic)
    wrong[R] = g.addition(analytic[R], nudge)
    with pytest.raises(AssertionError) as caught:
        check_gradients(g, loss, [R], feeds, analytic={R: wrong[R]}, directions=0)
    message = str(caught.value)
    assert "1 of 1 checks" in message and "element (5, 2)" in message
    # with a step in one direction only, but the element check finds it
    other = list(analytic)
    with pytest.raises(AssertionError, match=r"R\s+\[16, 4\]\s+64 elements\s+\S+\s+\S+\s+FAIL"):
        check_gradients(g, loss, other, feeds, analytic=wrong, directions=1)


def test_too_tight_tolerance_raises_the_table():
    g, loss, x, p, feeds = lstm_classifier()
    with pytest.raises(AssertionError) as caught:
        check_gradients(g, loss, [x, p["R"]], feeds, rtol=1e-14, atol=0.0, eps=1e-5)
    lines = str(caught.value).splitlines()
    assert "rtol=1.0e-14, atol=0.0e+00" in lines[1] and "eps=1.0e-05" in lines[1]
    assert lines[2].split() == ["tensor", "shape", "method", "worst", "error", "tolerance",
                                "result", "worst", "at", "analytic", "numeric"]
    assert set(lines[3]) <= {"-", " "}
    assert len(lines) == 4 + 4  # x and R: directions and elements
    assert all("1.0e-14" in line and "FAIL" in line for line in lines[4:])


def test_the_same_seed_gives_the_same_errors():
    g, loss, x, _, feeds = lstm_classifier()
    a = check_gradients(g, loss, [x], feeds, seed=5, per_element_limit=0)
    b = check_gradients(g, loss, [x], feeds, seed=5, per_element_limit=0)
    c = check_gradients(g, loss, [x], feeds, seed=6, per_element_limit=0)
    assert a == b and a != c


def test_feeds_are_not_modified():
    g, loss, x, p, feeds = lstm_classifier()
    copies = {k: np.array(v) for k, v in feeds.items()}
    check_gradients(g, loss, [x, p["R"]], feeds)
    for k, v in feeds.items():
        np.testing.assert_array_equal(v, copies[k])
    # a feed of with_ may be any real array-like: the check perturbs a float64 copy
    as_list = {**feeds, x: feeds[x].tolist()}
    assert check_gradients(g, loss, [x], as_list)[x] < 1e-5


# -- bad arguments -----------------------------------------------------------------------------

def test_float32_is_refused_with_a_reason():
    g, loss, x, _, feeds = lstm_classifier(dtype=rg.float32)
    with pytest.raises(TypeError, match=r"check_gradients: of: 'loss' is float32; the check "
                                        r"needs float64"):
        check_gradients(g, loss, [x], feeds)
    g = rg.Graph()
    x = g.placeholder((3,), rg.float64, name="x")
    y32 = g.cast(g.square(x), to=rg.float32, name="y32")
    loss = g.reductionSum(g.cast(y32, to=rg.float64), axes=[0])
    with pytest.raises(TypeError, match=r"check_gradients: of: the path from with_ to .* "
                                        r"passes through 'y32' \(float32\)"):
        check_gradients(g, loss, [x], {x: np.ones(3)})
    x32 = g.placeholder((3,), rg.float32, name="x32")
    loss2 = g.reductionSum(g.cast(x32, to=rg.float64), axes=[0])
    with pytest.raises(TypeError, match="check_gradients: with_: 'x32' is float32"):
        check_gradients(g, loss2, [x32], {x32: np.ones(3)})


def test_bad_arguments_name_the_function_and_the_argument():
    g, loss, x, p, feeds = lstm_classifier()
    const = g.constant(np.ones(3), name="k")
    mid = g.square(x, name="mid")
    elsewhere = rg.Graph()  # kept alive: a tensor of a deleted Graph gets its own message
    other = elsewhere.placeholder((1,), rg.float64, name="elsewhere")
    orphan = rg.Graph().placeholder((1,), rg.float64, name="orphan")
    cases = [
        (TypeError, "graph: expected an rnngraph Graph", {"graph": object()}),
        (TypeError, "of: expected an rnngraph Tensor", {"of": np.ones(3)}),
        (TypeError, "with_: expected a Tensor or a list of Tensors", {"with_": "x"}),
        (ValueError, "with_: expected at least one tensor", {"with_": []}),
        (ValueError, "with_: 'x' is given twice", {"with_": [x, x]}),
        (ValueError, "with_: 'k' is a constant, which cannot be perturbed", {"with_": [const]}),
        (ValueError, "with_: 'mid' is computed by a square op", {"with_": [mid]}),
        (ValueError, "with_: tensor 'elsewhere' belongs to another Graph", {"with_": [other]}),
        (ValueError, "with_: tensor 'orphan' belongs to a Graph that was deleted",
         {"with_": [orphan]}),
        (TypeError, "feeds: expected a dict", {"feeds": [1, 2]}),
        (ValueError, "feeds: placeholder 'x' of with_ needs a feed",
         {"feeds": {k: v for k, v in feeds.items() if k is not x}}),
        (ValueError, "eps: expected a finite number > 0, got 0", {"eps": 0}),
        (ValueError, "rtol: expected a finite number > 0", {"rtol": float("nan")}),
        (ValueError, "atol: expected a finite number >= 0", {"atol": -1.0}),
        (TypeError, "eps: expected a number, got str", {"eps": "1e-6"}),
        (TypeError, "directions: expected an int, got 1.5", {"directions": 1.5}),
        (ValueError, "directions: expected an int >= 0", {"directions": -1}),
        (TypeError, "per_element_limit: expected an int, got True",
         {"per_element_limit": True}),
        (ValueError, "directions: 0 leaves 'x' unchecked",
         {"directions": 0, "per_element_limit": 10}),
        (TypeError, "analytic: expected a dict", {"analytic": [1]}),
        (ValueError, "analytic: no gradient for 'x'", {"analytic": {}}),
        (ValueError, "analytic: 'R' not in with_", {"analytic": {x: x, p["R"]: x}}),
        (ValueError, (r"analytic: the gradient of 'x' \('k'\) has shape \[3\], the tensor "
                      r"\[4, 3, 5\]"), {"analytic": {x: const}}),
    ]
    base = {"graph": g, "of": loss, "with_": [x], "feeds": feeds}
    for error, message, change in cases:
        arguments = {**base, **change}
        with pytest.raises(error, match="^check_gradients: " + message):
            check_gradients(arguments.pop("graph"), arguments.pop("of"), arguments.pop("with_"),
                            arguments.pop("feeds"), **arguments)


# -- assert_allclose / assert_outputs_close ---------------------------------------------------

def test_assert_allclose_messages():
    desired = np.arange(24.0).reshape(2, 3, 4)
    actual = desired.copy()
    assert_allclose(actual, desired)
    actual[1, 0, 2] += 0.5
    actual[0, 0, 0] += 1e-3
    with pytest.raises(AssertionError) as caught:
        assert_allclose(actual, desired, rtol=1e-6, atol=1e-4, where="h")
    # |difference| / (atol + rtol·|desired|) = 0.5 / 1.14e-4
    assert str(caught.value) == (
        "h: 2 of 24 elements differ beyond atol + rtol·|desired| (rtol=1.0e-06, atol=1.0e-04); "
        "worst at (1, 0, 2): actual 14.5, desired 14, |difference| 5.00e-01 = 4.39e+03 × its "
        "tolerance")
    assert_allclose(actual, desired, rtol=0.1, atol=1e-2)
    with pytest.raises(AssertionError, match=r"^array: shape \[2, 3, 4\], desired \[24\]$"):
        assert_allclose(actual, desired.ravel())
    # NaNs at the same places match (equal_nan), a NaN against a number does not
    assert_allclose([np.nan, 1.0], [np.nan, 1.0])
    with pytest.raises(AssertionError, match="1 of 2 elements .* inf × its tolerance"):
        assert_allclose([np.nan, 1.0], [0.0, 1.0])
    with pytest.raises(AssertionError, match="1 of 2"):
        assert_allclose([np.nan, 1.0], [np.nan, 1.0], equal_nan=False)
    # an infinity matches only the same infinity, whatever the tolerance (its own is inf)
    assert_allclose([np.inf, -np.inf, 1.0], [np.inf, -np.inf, 1.0])
    for actual_value, desired_value in ((-np.inf, np.inf), (1.0, np.inf), (np.inf, 1.0),
                                        (1e308, np.inf), (np.nan, np.inf)):
        with pytest.raises(AssertionError, match="1 of 2 elements .* inf × its tolerance"):
            assert_allclose([actual_value, 1.0], [desired_value, 1.0], rtol=0.5, atol=1.0)
    # defaults follow the desired array's dtype
    x32 = np.float32(1.0) + np.float32(1e-7) * np.arange(4, dtype=np.float32)
    assert_allclose(x32, np.ones(4, np.float32))
    with pytest.raises(AssertionError, match=r"rtol=1.0e-10, atol=1.0e-12"):
        assert_allclose(x32.astype(np.float64), np.ones(4))
    assert_allclose(x32, np.ones(4))  # float32 against float64: float32's defaults
    with pytest.raises(AssertionError, match=r"rtol=0.0e\+00, atol=0.0e\+00"):
        assert_allclose(np.array([1, 2]), np.array([1, 3]))
    with pytest.raises(TypeError, match="^assert_allclose: desired: expected real numbers"):
        assert_allclose([1.0], ["a"])
    with pytest.raises(ValueError, match="^assert_allclose: rtol: expected a finite number"):
        assert_allclose([1.0], [1.0], rtol=-1.0)


def test_assert_allclose_compares_integers_exactly_in_their_own_dtype():
    # 2**53 + 1 and 2**53 are one float64: compared as integers, they differ
    big = 2**53
    assert_allclose(np.array([big + 1, 5]), np.array([big + 1, 5]))
    with pytest.raises(AssertionError) as caught:
        assert_allclose(np.array([big + 1, 5]), np.array([big, 5]), where="count")
    assert str(caught.value) == (
        "count: 1 of 2 elements differ beyond atol + rtol·|desired| (rtol=0.0e+00, "
        f"atol=0.0e+00); worst at (0,): actual {big + 1}, desired {big}, |difference| 1 = inf "
        "× its tolerance")
    # signed against unsigned, beyond int64: still exact
    top = np.array([2**64 - 1], np.uint64)
    assert_allclose(top, top.copy())
    with pytest.raises(AssertionError, match="actual -1, desired 18446744073709551615"):
        assert_allclose(np.array([-1]), top)
    with pytest.raises(AssertionError, match="actual 18446744073709551614, desired "
                                             "18446744073709551615, .difference. 1 ="):
        assert_allclose(top - np.uint64(1), top)
    assert_allclose(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError, match="actual 0, desired 1"):
        assert_allclose(np.array([True, False]), np.array([True, True]))
    # a tolerance given for integers is NumPy's rule
    assert_allclose(np.array([big + 2]), np.array([big]), atol=2)
    with pytest.raises(AssertionError, match=r"\|difference\| 3 = 1.5 × its tolerance"):
        assert_allclose(np.array([10]), np.array([7]), atol=2)


def test_assert_outputs_close_runs_and_lists_every_output_that_differs():
    g = rg.Graph()
    x = g.placeholder((2, 3), rg.float64, name="x")
    y = g.square(x, name="y")
    z = g.exponent(x, name="z")
    s = g.reductionSum(x, axes=[0, 1], name="s")
    xv = np.arange(6.0).reshape(2, 3) / 6
    out = assert_outputs_close(g, {x: xv}, {y: xv**2, z: np.exp(xv), s: [[xv.sum()]]})
    np.testing.assert_array_equal(out[y], xv**2)
    wrong_z = np.exp(xv)
    wrong_z[1, 2] += 1e-6
    with pytest.raises(AssertionError) as caught:
        assert_outputs_close(g, {x: xv}, {y: xv**2 + 1e-3, z: wrong_z, s: [[xv.sum()]]},
                             rtol=1e-9, atol=1e-12)
    lines = str(caught.value).splitlines()
    assert lines[0] == ("assert_outputs_close: 2 of 3 outputs differ beyond "
                        "atol + rtol·|desired|")
    assert lines[1].split()[:5] == ["tensor", "shape", "dataType", "rtol", "atol"]
    assert [line.split()[0] for line in lines[3:]] == ["y", "z"]
    assert "6 of 6" in lines[3] and "1 of 6" in lines[4] and "(1, 2)" in lines[4]
    with pytest.raises(AssertionError, match=r"s\s+\[1, 1\]\s+float64 .* shape \[1, 1\], "
                                             r"desired \[1\]"):
        assert_outputs_close(g, {x: xv}, {s: [xv.sum()]})
    with pytest.raises(TypeError, match="^assert_outputs_close: graph: expected"):
        assert_outputs_close(None, {x: xv}, {y: xv})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^assert_outputs_close: expected: expected a non-empty"):
        assert_outputs_close(g, {x: xv}, {})
    with pytest.raises(TypeError, match="^assert_allclose: actual: expected an array, got a "
                                        "symbolic Tensor"):
        assert_allclose(y, xv)


# -- the documentation's examples run ---------------------------------------------------------

def test_module_docstring_example():
    result = doctest.testmod(rt, verbose=False, raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0


def test_docs_example_test_file_runs(tmp_path):
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(# test_my_lstm\.py\n.*?)```", text, re.DOTALL)
    assert len(blocks) == 1, "docs/testing.md: the example test file's block"
    path = tmp_path / "test_my_lstm.py"
    path.write_text(blocks[0], encoding="utf-8")
    spec = importlib.util.spec_from_file_location("test_my_lstm", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [f for name, f in vars(module).items() if name.startswith("test_") and callable(f)]
    assert len(tests) == 4
    for test in tests:
        test()
