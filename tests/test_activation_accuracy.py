"""float32 activations against float64 NumPy, element by element.

A singleGateRNN with recurrentWeight = 0, no inputWeight and initState = 0 gives h_t = act(x_t),
so every value of a dense grid passes through the vectorised activation code (and through its
zero-padded row tails: H = 67 is not a multiple of the vector width).
"""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg

H = 67
ULP_BOUND = 3.0  # float tanh and sigmoid are within 2.5 ulp where measured (vector_math.hpp)


def activated(values: np.ndarray, activation) -> np.ndarray:
    n = -(-values.size // H)
    source = np.zeros(n * H, np.float32)
    source[: values.size] = values
    source = source.reshape(n, 1, H)
    g = rg.Graph()
    s = g.placeholder(shape=source.shape, dataType=rg.float32, name="source")
    R = g.constant(np.zeros((H, H), np.float32))
    h, = g.singleGateRNN(source=s, recurrentWeight=R,
                         descriptor=rg.SingleGateRNNDescriptor(activation=activation))
    return g.run(feeds={s: source}, targetTensors=[h])[h].ravel()[: values.size]


GRID = np.concatenate([np.linspace(-40, 40, 80_001), np.geomspace(1e-30, 1, 2_000),
                       -np.geomspace(1e-30, 1, 2_000)]).astype(np.float32)


@pytest.mark.parametrize("name, exact", [
    ("tanh", np.tanh),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
])
def test_float32_within_a_few_ulp(name, exact):
    out = activated(GRID, getattr(rg.RNNActivation, name)).astype(np.float64)
    ref = exact(GRID.astype(np.float64))
    normal = np.abs(ref) >= np.finfo(np.float32).tiny
    ulp = np.spacing(np.abs(ref[normal]).astype(np.float32)).astype(np.float64)
    worst = np.max(np.abs(out[normal] - ref[normal]) / ulp)
    assert worst <= ULP_BOUND, f"{name}: {worst:.2f} ulp"
    assert np.max(np.abs(out[~normal] - ref[~normal]), initial=0) < 1e-37


def test_saturation_infinities_and_nan():
    x = np.array([9.5, -9.5, 50, -50, np.inf, -np.inf, np.nan, 0, -0.0], np.float32)
    tanh = activated(x, rg.RNNActivation.tanh)
    np.testing.assert_array_equal(tanh[:6], [1, -1, 1, -1, 1, -1])  # exactly, as float tanh
    assert np.isnan(tanh[6]) and tanh[7] == 0 and tanh[8] == 0
    sigmoid = activated(x, rg.RNNActivation.sigmoid)
    np.testing.assert_array_equal(sigmoid[[2, 4, 5, 7]], [1, 1, 0, 0.5])
    assert np.isnan(sigmoid[6])
    for name in ("relu", "hardSigmoid", "none"):
        assert np.isnan(activated(x, getattr(rg.RNNActivation, name))[6]), name
