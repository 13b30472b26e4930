"""Graph.run's feeds (SPEC.md section 7): conversions that must give the clean result
bit for bit, and feeds that are refused with an error naming the placeholder."""

from __future__ import annotations

import contextlib
from types import MappingProxyType

import numpy as np
import pytest

import rnngraph as rg
from toolkit import Case, assert_close, draw_inputs, reference
from toolkit.placeholders import feeds, on_placeholders

CASE = Case.parse("singleGateRNN", "fwd-act=tanh-h0-H4-float32")  # T3 N2 I3 H4
T, N, I, H = CASE.T, CASE.N, CASE.I, CASE.H


def _misaligned(array):
    """The same values in a C-contiguous array whose data pointer is not aligned."""
    raw = np.zeros(array.nbytes + 1, np.uint8)
    view = np.frombuffer(raw[1:].data, dtype=array.dtype, count=array.size).reshape(array.shape)
    view[...] = array
    assert view.flags.c_contiguous and not view.flags.aligned
    return view


def _transposed_view(array):
    view = np.ascontiguousarray(array.transpose(2, 1, 0)).transpose(2, 1, 0)
    assert not view.flags.c_contiguous
    return view


def _strided_slice(array):
    big = np.zeros((2 * array.shape[0], array.shape[1], 3 * array.shape[2]), array.dtype)
    big[::2, :, ::3] = array
    view = big[::2, :, ::3]
    assert not view.flags.c_contiguous
    return view


def _reversed_view(array):
    view = np.ascontiguousarray(array[::-1])[::-1]
    assert view.strides[0] < 0
    return view


def _read_only(array):
    view = array.copy()
    view.setflags(write=False)
    return view


def _fortran(array):
    view = np.asfortranarray(array)
    assert not view.flags.c_contiguous
    return view


SAME_VALUE_FEEDS = {
    "float64-to-float32": lambda a: a.astype(np.float64),
    "float16": lambda a: a.astype(np.float16),
    "big-endian": lambda a: a.astype(">f4"),
    "list": lambda a: a.tolist(),
    "transposed-view": _transposed_view,
    "strided-slice": _strided_slice,
    "negative-strides": _reversed_view,
    "fortran-order": _fortran,
    "read-only": _read_only,
    "misaligned": _misaligned,
}


@pytest.mark.parametrize("convert", list(SAME_VALUE_FEEDS.values()), ids=list(SAME_VALUE_FEEDS))
def test_feed_conversions_give_the_clean_result(convert, rng):
    """Every feed below holds exactly the float32 values of the clean array (values chosen
    representable in float16 too), so the result must be bit-identical."""
    x = draw_inputs(CASE, rng)
    x["source"] = x["source"].astype(np.float16).astype(np.float32)
    g, ph, (h,) = on_placeholders(CASE)
    clean = g.run(feeds=feeds(ph, x), targetTensors=[h])[h]
    fed = convert(x["source"])
    before = np.array(fed, copy=True)
    lossy = getattr(fed, "dtype", None) == np.float64  # warns, once (test_friendly_edges.py)
    with pytest.warns(UserWarning, match="'source'") if lossy else contextlib.nullcontext():
        out = g.run(feeds=feeds(ph, x) | {ph["source"]: fed}, targetTensors=[h])[h]
    assert out.dtype == np.float32
    assert_close(out, clean, "identical", "h")
    np.testing.assert_array_equal(np.asarray(fed), before)  # the feed is not modified
    expected = reference(CASE, {k: v.astype(np.float64) for k, v in x.items()})["h"]
    assert_close(out, expected, "float32_forward", "h against the reference")


def test_non_contiguous_weight_feeds(rng):
    x = draw_inputs(CASE, rng)
    g, ph, (h,) = on_placeholders(CASE)
    clean = g.run(feeds=feeds(ph, x), targetTensors=[h])[h]
    odd = dict(x)
    odd["recurrentWeight"] = np.ascontiguousarray(x["recurrentWeight"].T).T  # R as R.T.T
    odd["inputWeight"] = np.asfortranarray(x["inputWeight"])
    odd["bias"] = np.repeat(x["bias"], 2)[::2]
    odd["initState"] = _read_only(x["initState"])
    out = g.run(feeds=feeds(ph, odd), targetTensors=[h])[h]
    assert_close(out, clean, "identical", "h")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8])
def test_integer_feeds_convert_to_the_placeholder_type(dtype, rng):
    case = CASE.but(dtype="float64")
    x = draw_inputs(case, rng)
    ints = rng.integers(0, 3, size=(T, N, I))
    x["source"] = ints.astype(np.float64)
    g, ph, (h,) = on_placeholders(case, dataType=rg.float64)
    clean = g.run(feeds=feeds(ph, x), targetTensors=[h])[h]
    out = g.run(feeds=feeds(ph, x) | {ph["source"]: ints.astype(dtype)}, targetTensors=[h])[h]
    assert out.dtype == np.float64
    assert_close(out, clean, "identical", "h")


class RefusesConversion:
    """An array-like whose __array__ raises, as a torch tensor that requires grad does."""

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("Can't call numpy() on Tensor that requires grad")


REJECTED_FEEDS = {
    "complex": (np.zeros((T, N, I), np.complex128), TypeError),
    "strings": (np.full((T, N, I), "a"), TypeError),
    "objects": (np.full((T, N, I), None, dtype=object), TypeError),
    "None": (None, TypeError),
    "wrong-shape": (np.zeros((T, N, I + 1), np.float32), ValueError),
    "wrong-rank": (np.zeros((T, N * I), np.float32), ValueError),
    "ragged-list": ([[[0.0] * I] * N, [[0.0] * I]], (ValueError, TypeError)),
    "refuses-conversion": (RefusesConversion(), TypeError),
}


@pytest.mark.parametrize("feed,error", list(REJECTED_FEEDS.values()), ids=list(REJECTED_FEEDS))
def test_rejected_feeds_name_the_placeholder(feed, error, rng):
    g, ph, (h,) = on_placeholders(CASE)
    x = draw_inputs(CASE, rng)
    with pytest.raises(error, match="'source'"):
        g.run(feeds=feeds(ph, x) | {ph["source"]: feed}, targetTensors=[h])


def test_symbolic_tensor_is_not_a_feed(rng):
    g, ph, (h,) = on_placeholders(CASE)
    x = draw_inputs(CASE, rng)
    with pytest.raises(TypeError, match="'source'"):
        g.run(feeds=feeds(ph, x) | {ph["source"]: ph["source"]}, targetTensors=[h])


def test_missing_feed_names_the_placeholder(rng):
    """By the placeholder's own name, here not its label."""
    g, ph, (h,) = on_placeholders(CASE, names={"recurrentWeight": "R"})
    x = draw_inputs(CASE, rng)
    del x["recurrentWeight"]
    with pytest.raises(ValueError, match="'R'"):
        g.run(feeds=feeds(ph, x), targetTensors=[h])


def test_feeding_a_non_placeholder_is_rejected(rng):
    g, ph, (h,) = on_placeholders(CASE)
    x = draw_inputs(CASE, rng)
    with pytest.raises(ValueError, match="not a placeholder"):
        g.run(feeds={h: np.zeros((T, N, H), np.float32), **feeds(ph, x)}, targetTensors=[h])
    const = g.constant(1.0, shape=(2,), dataType=rg.float32)
    with pytest.raises(ValueError, match="not a placeholder"):
        g.run(feeds={const: np.zeros(2, np.float32)}, targetTensors=[const])


def test_feeds_may_be_any_mapping(rng):
    """A read-only mapping (a MappingProxyType, a frozen config) runs as its dict does."""
    g, ph, (h,) = on_placeholders(CASE)
    x = feeds(ph, draw_inputs(CASE, rng))
    from_proxy = g.run(feeds=MappingProxyType(x), targetTensors=[h])[h]
    np.testing.assert_array_equal(from_proxy, g.run(feeds=x, targetTensors=[h])[h])
    with pytest.raises(TypeError, match="^run: feeds: expected a dict"):
        g.run(feeds=list(x.items()), targetTensors=[h])
