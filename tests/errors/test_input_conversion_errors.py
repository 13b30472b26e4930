"""Inputs are checked before anything is converted, and refused with an error naming the op
(or method) and the Swift label: arrays of booleans, complex numbers, strings or objects
given to an op, constants whose data or shape do not fit, placeholders without a dataType,
descriptors with an activation out of range, and broadcast views of a wrong shape, fed or
given to an op, which are refused without their dense copy ever being allocated."""

from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest

import rnngraph as rg
from toolkit import CELLS
from toolkit.placeholders import SIZES, build, every_input, input_shapes, op_name
from toolkit.spec import DESCRIPTORS, SLOTS

T, N, I, H = SIZES["T"], SIZES["N"], SIZES["I"], SIZES["H"]
ROWS = 1 << 26  # a broadcast view of this many rows of [N, I] floats holds 2.5 GiB densely
MiB = 1 << 20

WRONG_KINDS = {"bool": bool, "complex64": np.complex64, "complex128": np.complex128,
               "str": "U3", "bytes": "S3", "object": object}


@pytest.mark.parametrize("kind", WRONG_KINDS)
@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradients"])
@pytest.mark.parametrize("cell", CELLS)
def test_arrays_of_a_wrong_kind_name_the_op_and_label(cell, gradient, kind):
    """Each input of the op given as an array of that kind (the rest are placeholders)."""
    op, case = op_name(cell, gradient), every_input(cell)
    shapes = input_shapes(case, gradient)
    for label, shape in shapes.items():
        g = rg.Graph()
        args = {k: g.placeholder(shape=s, dataType=rg.float32, name=k) for k, s in shapes.items()}
        args[label] = np.zeros(shape, dtype=WRONG_KINDS[kind])
        source = args.pop("source")
        with pytest.raises(TypeError, match=re.escape(f"{op}: {label}: expected real numbers")):
            getattr(g, op)(source, **args, descriptor=case.descriptor())


CONSTANT_ERRORS = {
    "reshape-too-small": ({"value": np.zeros(6), "shape": (4,)}, ValueError, "shape"),
    "reshape-too-big": ({"value": [1.0, 2.0], "shape": (3, 1)}, ValueError, "shape"),
    "negative-fill": ({"value": 1.0, "shape": (-1, 2)}, ValueError, "shape"),
    "negative-reshape": ({"value": np.zeros(6), "shape": (-1, 3)}, ValueError, "shape"),
    "fractional-size": ({"value": 1.0, "shape": (2.5,)}, ValueError, "shape"),
    "bool-size": ({"value": 1.0, "shape": (True,)}, ValueError, "shape"),
    "str-size": ({"value": 1.0, "shape": ("a",)}, ValueError, "shape"),
    "None-size": ({"value": 1.0, "shape": (None,)}, ValueError, "shape"),
    "shape-not-a-sequence": ({"value": 1.0, "shape": 3}, TypeError, "shape"),
    "ragged": ({"value": [[1.0], [1.0, 2.0]]}, ValueError, "value"),
    "ragged-deep": ({"value": [[[1.0, 2.0]], [[1.0]]]}, ValueError, "value"),
    "complex": ({"value": np.zeros(2, complex)}, TypeError, "value"),
    "bool": ({"value": [True, False]}, TypeError, "value"),
    "strings": ({"value": ["1.0"]}, TypeError, "value"),
    "float16-dataType": ({"value": np.zeros(2), "dataType": "float16"}, TypeError, "dataType"),
    "fractions-for-int32": ({"value": np.zeros(2), "dataType": "int32"}, TypeError, "value"),
}


@pytest.mark.parametrize("arguments,error,label", list(CONSTANT_ERRORS.values()),
                         ids=list(CONSTANT_ERRORS))
def test_constant_errors_name_the_method_and_argument(arguments, error, label):
    with pytest.raises(error, match=f"^constant: {label}: "):
        rg.Graph().constant(**arguments)


def test_a_masked_array_with_masked_elements_is_refused():
    """np.asarray drops a mask: the op would compute with whatever the masked slots hold.
    A feed or constant with masked elements is refused by name; one without is its data."""
    g = rg.Graph()
    x = g.placeholder(shape=(3,), dataType=rg.float32, name="x")
    doubled = g.addition(x, x)
    data = np.array([1.0, 2.0, 3.0], np.float32)
    with pytest.raises(ValueError, match=r"^run: feed for 'x': a masked array with masked"):
        g.run(feeds={x: np.ma.masked_array(data, mask=[0, 1, 0])}, targetTensors=[doubled])
    with pytest.raises(ValueError, match=r"^constant: value: a masked array with masked"):
        g.constant(np.ma.masked_array(data, mask=[1, 0, 0]))
    unmasked = np.ma.masked_array(data, mask=False)
    out = g.run(feeds={x: unmasked}, targetTensors=[doubled])[doubled]
    np.testing.assert_array_equal(out, 2 * data)


def test_constant_still_fills_reshapes_and_converts():
    g = rg.Graph()
    filled = g.constant(2.0, shape=(np.int64(2), 3))
    reshaped = g.constant(np.arange(6), shape=[3, 2], dataType=rg.float64)
    tensor = g.constant(np.ones((2, 2)), dataType=None)  # None: float64 from the data
    out = g.run(feeds={}, targetTensors=[filled, reshaped, tensor])
    np.testing.assert_array_equal(out[filled], np.full((2, 3), 2.0, np.float32))
    np.testing.assert_array_equal(out[reshaped], np.arange(6.0).reshape(3, 2))
    assert out[reshaped].dtype == np.float64 and tensor.dataType == rg.float64
    assert not out[filled].flags.writeable and out[filled].flags.c_contiguous


@pytest.mark.parametrize("dataType", [None, "uint8", np.complex64, "float16", bool, object],
                         ids=["None", "uint8", "complex64", "float16", "bool", "object"])
def test_placeholder_needs_a_supported_data_type(dataType):
    with pytest.raises(TypeError, match="^placeholder: dataType: expected rnngraph.float32"):
        rg.Graph().placeholder(shape=(T, N, I), dataType=dataType, name="x")


@pytest.mark.parametrize("gradient", [False, True], ids=["forward", "gradients"])
@pytest.mark.parametrize("cell", CELLS)
def test_activations_out_of_range_are_refused_through_descriptors(cell, gradient):
    """Set, given to the constructor, or slipped past the setter: never reaches the core."""
    kind, op = DESCRIPTORS[cell], op_name(cell, gradient)
    for slot in SLOTS[cell]:
        where = f"{kind.__name__}.{slot}"
        for bad in (5, -1, 99):
            with pytest.raises(ValueError, match=re.escape(where)):
                kind(**{slot: bad})
            with pytest.raises(ValueError, match=re.escape(where)):
                setattr(kind(), slot, bad)
        for bad, error in ((7, ValueError), (-1, ValueError), (True, TypeError),
                           (2.0, TypeError)):
            descriptor = kind()
            object.__setattr__(descriptor, slot, bad)
            with pytest.raises(error, match=re.escape(f"{op}: descriptor: {where}")):
                build(every_input(cell), gradient, descriptor=descriptor)


def _peak_while_refused(call, error, message):
    """Peak bytes traced (NumPy's data included) while ``call`` raises ``error``."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        with pytest.raises(error, match=message):
            call()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        if not tracing:
            tracemalloc.stop()


def _lstm(g, source, **inputs):
    return g.LSTM(source, recurrentWeight=np.zeros((4 * H, H), np.float32),
                  inputWeight=np.zeros((4 * H, I), np.float32), **inputs)


def _feed(value, shape=(T, N, I)):
    def call():
        g = rg.Graph()
        x = g.placeholder(shape=shape, dataType=rg.float32, name="x")
        g.run(feeds={x: value}, targetTensors=[x])
    return call


def _open_mask_feed():
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
    m = g.placeholder(shape=(None, None, None), dataType=rg.float32, name="m")
    (h,) = _lstm(g, x, mask=m)
    g.run(feeds={x: np.zeros((T, N, I), np.float32),
                 m: np.broadcast_to(np.float32(1), (ROWS, N, H))}, targetTensors=[h])


def _op_argument(label):
    def call():
        g = rg.Graph()
        view = np.broadcast_to(np.float32(1), (ROWS, N, H))
        if label == "source":
            _lstm(g, view)
        else:
            _lstm(g, g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x"), mask=view)
    return call


BROADCAST_VIEWS = {
    "feed": (_feed(np.broadcast_to(np.float32(1), (ROWS, N, I))),
             "run: feed for 'x': expected shape"),
    "feed-to-convert": (_feed(np.broadcast_to(np.float64(1), (ROWS, N, I))),
                        "run: feed for 'x': expected shape"),
    "feed-of-ints": (_feed(np.broadcast_to(np.int64(1), (ROWS, N, I))),
                     "run: feed for 'x': expected shape"),
    "feed-to-open-placeholder": (_feed(np.broadcast_to(np.float32(1), (ROWS, N, I)),
                                       shape=(None, N, I + 1)),
                                 "run: feed for 'x': expected shape"),
    "feed-to-open-mask": (_open_mask_feed, "LSTM: mask: expected a shape broadcastable"),
    "op-mask": (_op_argument("mask"), "LSTM: mask: expected a shape broadcastable"),
    "op-source": (_op_argument("source"), "LSTM: inputWeight: expected shape"),
    "constant": (lambda: rg.Graph().constant(np.broadcast_to(np.float32(1), (ROWS, N, I)),
                                            shape=(T, N, I)),
                 "constant: shape: "),
}


@pytest.mark.parametrize("call,message", list(BROADCAST_VIEWS.values()), ids=list(BROADCAST_VIEWS))
def test_wrong_broadcast_views_are_refused_before_any_copy(call, message):
    """Each view's dense copy would take 2 GiB or more; refusing it allocates almost nothing."""
    assert _peak_while_refused(call, ValueError, re.escape(message)) < MiB


def test_broadcast_feed_of_an_open_placeholder_runs_like_its_dense_copy(rng):
    """Kept a view until the op has checked it, a broadcast mask gives the same result; the
    placeholder itself, as a target, returns a dense copy of its feed."""
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float64, name="x")
    m = g.placeholder(shape=(None, None, None), dataType=rg.float64, name="m")
    R = rng.standard_normal((4 * H, H)) * 0.3
    W = rng.standard_normal((4 * H, I)) * 0.3
    (h,) = g.LSTM(x, recurrentWeight=R, inputWeight=W, mask=m)
    source = rng.standard_normal((T, N, I))
    view = np.broadcast_to(np.array([[[1.0]], [[0.0]], [[1.0]]], np.float32), (T, N, H))
    assert 0 in view.strides
    dense = g.run(feeds={x: source, m: np.ascontiguousarray(view, np.float64)},
                  targetTensors=[h])[h]
    out = g.run(feeds={x: source, m: view}, targetTensors=[h, m])
    np.testing.assert_array_equal(out[h], dense)
    np.testing.assert_array_equal(out[m], view)
    assert out[m].dtype == np.float64 and out[m].flags.c_contiguous


def test_a_feed_of_a_wrong_shape_names_the_ops_that_read_it():
    """The placeholder's name alone may say little ('placeholder_0'): the error also names
    each op and label its feed goes to."""
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32)
    (h,) = _lstm(g, x, name="lstm")
    with pytest.raises(ValueError, match=re.escape(
            f"run: feed for 'placeholder_0': expected shape [{T}, {N}, {I}], got "
            f"[{T}, {N}, {I + 1}] (read as LSTM 'lstm': source)")):
        g.run(feeds={x: np.zeros((T, N, I + 1), np.float32)}, targetTensors=[h])


def test_a_broadcast_feed_too_large_to_make_dense_names_the_op_and_label():
    """A broadcast view fed to an open placeholder stays a view until the op has checked its
    shape; making it dense then fails for lack of memory: a MemoryError naming the op and
    the label it was fed as, refused before any allocation when the copy needs more than the
    machine's memory and swap (2^46 rows of 16 bytes: where the kernel overcommits memory, an
    allocation would succeed and the copy be killed; a sanitizer's allocator would abort)."""
    g = rg.Graph()
    x = g.placeholder(shape=(None, None, None), dataType=rg.float32)
    (h,) = g.singleGateRNN(x, recurrentWeight=np.zeros((4, 4), np.float32))
    with pytest.raises(MemoryError, match=r"^singleGateRNN: source: out of memory"):
        g.run(feeds={x: np.broadcast_to(np.float32(0), (2**46, 1, 4))}, targetTensors=[h])
