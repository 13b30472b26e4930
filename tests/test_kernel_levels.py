"""Every instruction-set build of the core this CPU can run (baseline, AVX2, AVX-512) gives
the NumPy reference's results, on tiny steps (the small kernels) and on batch and hidden
sizes that take the register-blocked and BLAS paths."""

import os

import numpy as np
import pytest

import harness
from rnngraph import _native

LEVELS = _native.supported_levels()
SIZES = [(5, 1, 3, 4), (6, 13, 40, 37), (4, 70, 24, 20)]  # T, N, I, H


def test_this_machine_runs_its_best_level():
    expected = os.environ.get(_native.VARIABLE) or LEVELS[0]  # unless a level is forced
    assert _native.core.kernel_level == expected
    assert LEVELS[-1] == "baseline"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("cell", ["singleGateRNN", "LSTM", "GRU"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "T{}-N{}-I{}-H{}".format(*s))
def test_level_matches_the_reference(level, cell, size):
    core = _native.load(level)
    T, N, I, H = size
    rng = np.random.default_rng(11)
    x = harness.make_inputs(cell, rng, T=T, N=N, I=I, H=H, bidirectional=True, mask=True,
                            peephole=True, secondaryBias=True, scale=0.4)
    properties = {"bidirectional": True}
    if cell == "GRU":
        properties["resetAfter"] = bool(N % 2)
    desc = harness.descriptor(cell, **properties)
    options = getattr(core, type(desc).__name__.replace("Descriptor", "Options"))(**properties)
    expected = harness.reference_forward(cell, x, desc)
    h, c, z = core.rnn_forward(options, x, training=True)
    np.testing.assert_allclose(h, expected["h"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(z, expected["zState"], rtol=1e-12, atol=1e-12)
    # The gradients of this level against the baseline build's.
    dy = rng.standard_normal(h.shape)
    saved = {"cellOutputFwd": c} if cell == "LSTM" else ({"outputFwd": h} if cell == "GRU" else {})
    inputs = x | saved | {"sourceGradient": dy, "zState": z}
    grads = core.rnn_gradients(options, inputs)
    baseline_core = _native.load("baseline")
    baseline_options = getattr(baseline_core, type(options).__name__)(**properties)
    baseline = baseline_core.rnn_gradients(baseline_options, inputs)
    assert list(grads) == list(baseline)
    for label in grads:
        np.testing.assert_allclose(grads[label], baseline[label], rtol=1e-11, atol=1e-11)
