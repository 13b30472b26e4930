"""Arrays that went through pickle (multiprocessing, worker processes, files) and arrays whose
dtype carries metadata are the same float32/float64 arrays: both layers accept them (their
dtype objects are equal, not identical), and a non-native byte order is still refused."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import rnngraph as rg
from rnngraph._native import core


def variants(array: np.ndarray) -> dict[str, np.ndarray]:
    return {"pickled": pickle.loads(pickle.dumps(array)),
            "metadata": array.astype(np.dtype(array.dtype, metadata={"units": "volts"}))}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", ["pickled", "metadata"])
def test_graph_and_core_accept_equal_dtypes(variant, dtype, rng):
    x = rng.standard_normal((3, 2, 4)).astype(dtype)
    R = (0.3 * rng.standard_normal((8, 2))).astype(dtype)
    W = (0.3 * rng.standard_normal((8, 4))).astype(dtype)
    g = rg.Graph()
    source = g.placeholder(shape=x.shape, dataType=dtype)
    (h,) = g.LSTM(source, recurrentWeight=variants(R)[variant], inputWeight=W)
    expected = g.run(feeds={source: x}, targetTensors=[h])[h]
    got = g.run(feeds={source: variants(x)[variant]}, targetTensors=[h])[h]
    np.testing.assert_array_equal(got, expected)
    direct = core.rnn_forward(core.LSTMOptions(), {"source": variants(x)[variant],
                                                   "recurrentWeight": variants(R)[variant],
                                                   "inputWeight": variants(W)[variant]})[0]
    np.testing.assert_array_equal(direct, expected)


def test_non_native_byte_order_is_refused_by_the_core(rng):
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    swapped = x.astype(x.dtype.newbyteorder())
    inputs = {"source": swapped, "recurrentWeight": np.zeros((8, 2), np.float32),
              "inputWeight": np.zeros((8, 4), np.float32)}
    with pytest.raises(TypeError, match="LSTM: source: expected dtype float32 or float64"):
        core.rnn_forward(core.LSTMOptions(), inputs)
