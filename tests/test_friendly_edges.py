"""Friendlier edges (issue 16): a warning when a feed loses precision, ``repr(Graph)``, and
descriptors that document their properties and refuse typos and wrong types clearly."""

from __future__ import annotations

import copy
import inspect
import pickle
import pydoc
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import rnngraph as rg
from rnngraph import graph as graph_module

ROOT = Path(__file__).resolve().parents[1]
DESCRIPTORS = [rg.SingleGateRNNDescriptor, rg.LSTMDescriptor, rg.GRUDescriptor]


def doubling(dataType=rg.float32, shape=(2, 3), name="x"):
    g = rg.Graph()
    x = g.placeholder(shape=shape, dataType=dataType, name=name)
    return g, x, g.addition(x, x)


# --- feeds converted to a lower precision ---------------------------------------------------

def test_float64_into_float32_warns_once_per_placeholder():
    g, x, y = doubling()
    z = g.placeholder(shape=(2, 3), dataType=rg.float32, name="z")
    out = g.multiplication(y, z)
    value = np.full((2, 3), 0.1)
    with pytest.warns(UserWarning) as record:
        result = g.run(feeds={x: value, z: np.ones((2, 3), np.float32)}, targetTensors=[out])
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("run: feed for 'x': float64 converted to the placeholder's "
                              "float32 loses precision")
    assert "feed float32" in message and "make the placeholder float64" in message
    assert record[0].filename == __file__  # it points at the run call
    np.testing.assert_array_equal(result[out], np.float32(0.1) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g.run(feeds={x: value, z: np.ones((2, 3), np.float32)}, targetTensors=[out])  # quiet
        g.run(feeds={x: value[::-1], z: np.ones((2, 3), np.float32)}, targetTensors=[out])
    with pytest.warns(UserWarning, match=r"^run: feed for 'z': float64"):  # its own warning
        g.run(feeds={x: value, z: np.ones((2, 3))}, targetTensors=[out])


def test_each_graph_and_each_copy_warns_for_itself():
    g, x, y = doubling()
    with pytest.warns(UserWarning, match="'x'"):
        g.run(feeds={x: np.ones((2, 3))}, targetTensors=[y])
    other, x2, y2 = doubling()
    with pytest.warns(UserWarning, match="'x'"):
        other.run(feeds={x2: np.ones((2, 3))}, targetTensors=[y2])
    g2, (x3, y3) = copy.deepcopy((g, (x, y)))
    with pytest.warns(UserWarning, match="'x'"):
        g2.run(feeds={x3: np.ones((2, 3))}, targetTensors=[y3])


def test_a_warning_turned_into_an_error_is_raised_at_every_run():
    g, x, y = doubling()
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(UserWarning, match="'x'"):
                g.run(feeds={x: np.ones((2, 3))}, targetTensors=[y])
    with pytest.warns(UserWarning, match="'x'"):
        g.run(feeds={x: np.ones((2, 3))}, targetTensors=[y])


def test_a_refused_feed_raises_without_a_warning_first():
    g, x, y = doubling()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"'x': expected shape \[2, 3\]"):
            g.run(feeds={x: np.ones((2, 4))}, targetTensors=[y])
    with pytest.warns(UserWarning, match="'x'"):  # not counted as warned
        g.run(feeds={x: np.ones((2, 3))}, targetTensors=[y])


QUIET_FEEDS = {
    "float32": (rg.float32, lambda: np.ones((2, 3), np.float32)),
    "float32-view": (rg.float32, lambda: np.ones((3, 2), np.float32).T),
    "float16": (rg.float32, lambda: np.ones((2, 3), np.float16)),
    "big-endian-float32": (rg.float32, lambda: np.ones((2, 3), ">f4")),
    "python-list": (rg.float32, lambda: [[0.1, 0.2, 0.3]] * 2),
    "int64-small": (rg.float32, lambda: np.full((2, 3), -(2**24), np.int64)),
    "int32-small": (rg.float32, lambda: np.arange(6, dtype=np.int32).reshape(2, 3)),
    "uint16": (rg.float32, lambda: np.full((2, 3), 65535, np.uint16)),
    "int64-empty": (rg.float32, lambda: np.zeros((0, 3), np.int64)),
    "float64": (rg.float64, lambda: np.full((2, 3), 0.1)),
    "float32-into-float64": (rg.float64, lambda: np.full((2, 3), 0.1, np.float32)),
    "int32-into-float64": (rg.float64, lambda: np.full((2, 3), 2**31 - 1, np.int32)),
    "int64-into-float64": (rg.float64, lambda: np.full((2, 3), 2**53, np.int64)),
    "int64-into-int32": (rg.int32, lambda: np.full((2, 3), 7, np.int64)),
}


@pytest.mark.parametrize("dataType,feed", list(QUIET_FEEDS.values()), ids=list(QUIET_FEEDS))
def test_conversions_that_keep_every_value_are_quiet(dataType, feed):
    """Exact conversions, and Python lists (which state no dtype, as in NumPy's arithmetic)."""
    value = feed()
    g, x, y = doubling(dataType, shape=(None, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = g.run(feeds={x: value}, targetTensors=[y])[y]
    assert out.dtype == dataType.numpy
    np.testing.assert_array_equal(out, 2 * np.asarray(value).astype(dataType.numpy))


def test_python_numbers_are_quiet_and_numpy_scalars_warn():
    g, x, y = doubling(shape=())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert g.run(feeds={x: 0.1}, targetTensors=[y])[y] == np.float32(0.1) * 2
        g.run(feeds={x: np.float32(0.1)}, targetTensors=[y])
    with pytest.warns(UserWarning, match="'x': float64"):
        g.run(feeds={x: np.float64(0.1)}, targetTensors=[y])


LOSSY_INTEGERS = {
    "int64-into-float32": (rg.float32, np.int64, 2**24 + 1, r"int64 values beyond ±2\*\*24"),
    "int32-into-float32": (rg.float32, np.int32, -(2**24) - 1, r"int32 values beyond ±2\*\*24"),
    "uint32-into-float32": (rg.float32, np.uint32, 2**32 - 1, r"uint32 values beyond ±2\*\*24"),
    "int64-into-float64": (rg.float64, np.int64, 2**53 + 1, r"int64 values beyond ±2\*\*53"),
}


@pytest.mark.parametrize("dataType,dtype,big,message", list(LOSSY_INTEGERS.values()),
                         ids=list(LOSSY_INTEGERS))
def test_integers_beyond_the_exact_range_warn(dataType, dtype, big, message):
    g, x, y = doubling(dataType)
    value = np.ones((2, 3), dtype)
    value[1, 2] = big
    with pytest.warns(UserWarning, match=f"^run: feed for 'x': {message} converted to the "
                                         f"placeholder's {dataType.value} lose precision"):
        out = g.run(feeds={x: value}, targetTensors=[y])[y]
    assert out[1, 2] == 2 * dataType.numpy.type(big)


def test_longdouble_into_float64_warns_where_it_is_wider():
    """x86-64's 80-bit long double loses bits in float64 and warns; where long double is
    float64 itself, nothing is lost and nothing warns."""
    g, x, y = doubling(rg.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g.run(feeds={x: np.ones((2, 3), np.longdouble)}, targetTensors=[y])
    wider = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == int(wider), messages
    if wider:
        assert re.search("'x': .* converted to the placeholder's float64", messages[0])


def test_the_fast_path_does_not_look_for_lost_precision(monkeypatch):
    """A feed already of the placeholder's dtype, dense and aligned, is used as it is."""
    def fail(*args):
        raise AssertionError("the fast path reached _warn_if_lossy")

    monkeypatch.setattr(graph_module, "_warn_if_lossy", fail)
    g, x, _ = doubling()
    value = np.ones((2, 3), np.float32)
    result = g.run(feeds={x: value}, targetTensors=[x])[x]  # (a copy: not the caller's array)
    assert np.array_equal(result, value) and not np.shares_memory(result, value)


@pytest.mark.parametrize("cell", ["singleGateRNN", "LSTM", "GRU"])
def test_a_float64_array_given_to_a_float32_recurrent_op_warns_at_build_time(cell):
    """Arrays become constants of the op's dataType: float64 weights for a float32 op lose
    precision, as a float64 feed does; float32 arrays and a float64 op are quiet."""
    G = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}[cell]
    g = rg.Graph()
    x = g.placeholder((3, 2, 4), rg.float32)
    build = getattr(g, cell)
    with pytest.warns(UserWarning, match=rf"^{cell}: recurrentWeight: an array of float64 converted "
                      r"to the op's float32 loses precision") as caught:
        build(x, recurrentWeight=np.zeros((G * 2, 2)), inputWeight=np.zeros((G * 2, 4), np.float32))
    assert len(caught) == 1 and caught[0].filename == __file__  # points at the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build(x, recurrentWeight=np.zeros((G * 2, 2), np.float32),
              inputWeight=np.zeros((G * 2, 4), np.float32))
        x64 = g.placeholder((3, 2, 4), rg.float64)
        build(x64, recurrentWeight=np.zeros((G * 2, 2)), inputWeight=np.zeros((G * 2, 4)))


@pytest.mark.parametrize("dtype", [">f8", np.longdouble, ">f4", np.float16])
def test_an_array_source_of_any_byte_order_keeps_its_precision(dtype):
    """An array's dataType, for a constant or an op's array source, is float64 for a float of
    8 bytes or more in either byte order (a big-endian float64 was made float32, silently),
    float32 for narrower ones; a long double made float64 warns that it loses precision."""
    rng = np.random.default_rng(0)
    x, R, W = rng.standard_normal((3, 2, 4)), rng.standard_normal((8, 2)), rng.standard_normal((8, 4))
    wide = np.dtype(dtype).itemsize >= 8
    expected = rg.float64 if wide else rg.float32
    g = rg.Graph()
    assert g.constant(x.astype(dtype)).dataType == expected
    lossy = np.dtype(dtype).itemsize > 8
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        h, = g.LSTM(x.astype(dtype), recurrentWeight=R.astype(expected.numpy),
                    inputWeight=W.astype(expected.numpy))
    assert h.dataType == expected
    assert [str(w.message).split(":")[1].strip() for w in caught] == (["source"] if lossy else [])
    got = g.run(targetTensors=[h])[h]
    native = rg.Graph()
    want, = native.LSTM(x.astype(dtype).astype(expected.numpy),
                        recurrentWeight=R.astype(expected.numpy),
                        inputWeight=W.astype(expected.numpy))
    assert got.dtype == expected.numpy
    assert np.array_equal(got, native.run(targetTensors=[want])[want])


def test_the_readme_example_feeds_the_placeholders_dtype():
    text = (ROOT / "README.md").read_text()
    example = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert example is not None
    namespace: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(example.group(1), "README.md", "exec"), namespace)  # noqa: S102


# --- repr(Graph) ---------------------------------------------------------------------------

def test_graph_repr_counts_ops_placeholders_and_variables():
    g = rg.Graph()
    assert repr(g) == "Graph(ops=0, placeholders=0, variables=0)"
    x = g.placeholder(shape=(2, 3), dataType=rg.float32, name="x")
    w = g.variable(0.5, shape=(2, 3), dataType=rg.float32, name="w")
    y = g.multiplication(x, w)
    g.assign(w, tensor=g.addition(y, 1.0))  # the 1.0 becomes a constant
    assert repr(g) == "Graph(ops=6, placeholders=1, variables=1)"
    assert repr(copy.deepcopy(g)) == repr(g)


# --- descriptors -------------------------------------------------------------------------

def properties(cls):
    """{name: (type name, default)} from a default instance."""
    d = cls()
    return {name: ("bool" if isinstance(v, bool) else "RNNActivation", v)
            for name, v in ((name, getattr(d, name)) for name in d.as_dict())}


@pytest.mark.parametrize("cls", DESCRIPTORS, ids=lambda c: c.__name__)
def test_descriptor_signature_names_every_property(cls):
    parameters = inspect.signature(cls).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    assert {name: p.default for name, p in parameters.items()} == {
        name: default for name, (_, default) in properties(cls).items()}
    assert list(parameters) == list(cls().as_dict())  # the order of repr and as_dict


@pytest.mark.parametrize("cls", DESCRIPTORS, ids=lambda c: c.__name__)
def test_descriptor_docstring_gives_every_property_its_type_and_default(cls):
    documented = dict(re.findall(r"^        (\w+) \((\w+, default \w+)\): ", cls.__doc__,
                                 re.MULTILINE))
    expected = {name: f"{kind}, default {default.name if kind == 'RNNActivation' else default}"
                for name, (kind, default) in properties(cls).items()}
    assert documented == expected
    shown = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    assert re.search(rf"{cls.__name__}\(\*, reverse: '?bool'? = False", shown)  # help()'s signature
    for name, text in expected.items():
        assert f"{name} ({text}):" in shown


@pytest.mark.parametrize("cls", DESCRIPTORS, ids=lambda c: c.__name__)
def test_descriptor_typo_names_the_class_and_lists_the_properties(cls):
    d = cls()
    listed = ", ".join(d.as_dict())
    with pytest.raises(AttributeError) as info:
        d.bidirectinal = True
    assert isinstance(info.value, TypeError)  # also the TypeError of a wrong argument
    assert str(info.value) == (f"{cls.__name__} has no property 'bidirectinal' (did you mean "
                               f"'bidirectional'?); its properties: {listed}")
    with pytest.raises(AttributeError, match=f"^{cls.__name__} has no property 'colour'; its "
                                             f"properties: {listed}$"):
        d.colour = 1
    assert not hasattr(d, "bidirectinal") and d == cls()
    with pytest.raises(TypeError, match=rf"^{cls.__name__} has no property 'Reverse' \(did you "
                                        r"mean 'reverse'\?\)"):
        cls(Reverse=True)
    with pytest.raises(TypeError, match=f"^{cls.__name__} takes keyword arguments only"):
        cls(True)


@pytest.mark.parametrize("cls", DESCRIPTORS, ids=lambda c: c.__name__)
def test_descriptor_wrong_types_name_the_property(cls):
    d = cls()
    kind = cls.__name__
    for name, (type_name, _) in properties(cls).items():
        bad = "yes" if type_name == "bool" else "tanh"
        with pytest.raises(TypeError, match=f"^{kind}.{name}: expected an? {type_name}"):
            setattr(d, name, bad)
        with pytest.raises(TypeError, match=f"^{kind}.{name}: expected an? {type_name}"):
            cls(**{name: bad})
    assert d == cls()


@pytest.mark.parametrize("cls", DESCRIPTORS, ids=lambda c: c.__name__)
def test_descriptor_copies_and_pickles(cls):
    d = cls(training=True, bidirectional=True)
    for twin in (d.copy(), copy.copy(d), copy.deepcopy(d), pickle.loads(pickle.dumps(d))):
        assert twin == d and type(twin) is cls and twin is not d
        twin.reverse = True
        assert not d.reverse
