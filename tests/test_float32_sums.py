"""The bias gradients are sums over all T·N rows (SPEC.md section 6): in float32 they must err
by about as much as NumPy's and torch's pairwise sums, not grow with T·N as a row-by-row sum
does (13-17× torch's error at T·N = 12800-16000). Each float32 result is compared with the
same op in float64 on the same (float32-rounded) inputs."""

from __future__ import annotations

import numpy as np
import pytest

import rnngraph as rg

T, N, H = 200, 64, 256  # T·N = 12800 rows summed
# Normwise relative error. Measured 0.4-1.2e-7 here; row by row it was 1.6-2.1e-6.
BOUND = 4e-7


def _error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


@pytest.mark.parametrize("mean", [0.0, 0.5])
def test_the_bias_gradient_is_a_pairwise_sum(mean, rng):
    """With the identity activation, no input weight and R = 0, the bias gradient is exactly
    the column sums of sourceGradient; an offset mean makes a running sum err the most."""
    sourceGradient = (rng.standard_normal((T, N, H)) + mean).astype(np.float32)
    got = {}
    for dtype in (np.float32, np.float64):
        g = rg.Graph()
        zeros = np.zeros((T, N, H), dtype)
        grads = g.singleGateRNNGradients(
            zeros, recurrentWeight=np.zeros((H, H), dtype),
            sourceGradient=sourceGradient.astype(dtype), zState=zeros,
            bias=np.zeros(H, dtype),
            descriptor=rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.none))
        got[dtype] = g.run(targetTensors=grads)[grads[2]]
    np.testing.assert_allclose(got[np.float64], sourceGradient.astype(np.float64).sum((0, 1)),
                               rtol=1e-14)
    assert _error(got[np.float32], got[np.float64]) < BOUND


def test_the_gru_bias_gradients_are_pairwise_sums(rng):
    """The reset-after GRU's bias and secondaryBias gradients (the latter summed by the cell,
    cpp/src/cells/gru.cpp), with PyTorch's default initialisation."""
    I, s = 32, 1 / np.sqrt(H)
    inputs = {"source": rng.standard_normal((T, N, I)),
              "recurrentWeight": rng.uniform(-s, s, (3 * H, H)),
              "inputWeight": rng.uniform(-s, s, (3 * H, I)), "bias": rng.uniform(-s, s, 3 * H),
              "secondaryBias": rng.uniform(-s, s, H)}
    inputs = {label: value.astype(np.float32) for label, value in inputs.items()}
    sourceGradient = rng.standard_normal((T, N, H)).astype(np.float32)
    got = {}
    for dtype in (np.float32, np.float64):
        g = rg.Graph()
        d = rg.GRUDescriptor(resetAfter=True, training=True)
        given = {label: value.astype(dtype) for label, value in inputs.items()}
        h, z = g.GRU(descriptor=d, **given)
        grads = g.GRUGradients(sourceGradient=sourceGradient.astype(dtype), zState=z,
                               outputFwd=h, descriptor=d, **given)
        out = g.run(targetTensors=grads)
        # (returned: source, recurrentWeight, inputWeight, bias, secondaryBias)
        got[dtype] = {"bias": out[grads[3]], "secondaryBias": out[grads[4]]}
    for label in ("bias", "secondaryBias"):
        assert _error(got[np.float32][label], got[np.float64][label]) < BOUND, label
