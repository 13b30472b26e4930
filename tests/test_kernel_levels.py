"""Every instruction-set build of the core this CPU can run (baseline, AVX2, AVX-512) gives
the NumPy reference's results, on tiny steps (the small kernels) and on batch and hidden
sizes that take the register-blocked and BLAS paths."""

import os

import pytest

from rnngraph import _native
from toolkit import CELLS, Case, assert_all_close, assert_close, draw_inputs, reference
from toolkit.spec import output_names

LEVELS = _native.supported_levels()
# T, N, I, H. H = 150: two-vector panels whose last one is part padding (19 vectors with AVX2,
# 10 with AVX-512); H = 37: one-vector panels, and H = 20 with AVX2 (tuning.hpp,
# kPanelPaddingShare).
SIZES = [(5, 1, 3, 4), (6, 13, 40, 37), (4, 70, 24, 20), (3, 16, 16, 150)]


def test_this_machine_runs_its_best_level():
    expected = os.environ.get(_native.VARIABLE) or LEVELS[0]  # unless a level is forced
    assert _native.core.kernel_level == expected
    assert LEVELS[-1] == "baseline"


def options(core, case):
    """The typed options of ``core`` (each level has its own types) for ``case``."""
    desc = case.descriptor()
    name = type(desc).__name__.replace("Descriptor", "Options")
    return getattr(core, name)(**{k: v for k, v in desc.as_dict().items()
                                  if k not in ("training", "produceCell")})


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "T{}-N{}-I{}-H{}".format(*s))
def test_level_matches_the_reference(level, cell, size, rng):
    T, N, I, H = size
    case = Case(cell, "bi", resetAfter=cell == "GRU" and N % 2 == 1,
                T=T, N=N, I=I, H=H).with_all_inputs()
    if case.peephole:
        case = case.but(peephole="[D4H]")  # the core takes the flat layout only
    x = draw_inputs(case, rng, scale=0.4)
    core = _native.load(level)
    h, c, z = core.rnn_forward(options(core, case), x, training=True)
    out = dict(zip(output_names(cell, training=True), (h, *([c] if cell == "LSTM" else []), z)))
    expected = reference(case, x)
    assert_all_close({k: out[k] for k in expected}, expected, "float64", f"{level} {case.id}")
    # The gradients of this level against the baseline build's.
    dy = rng.standard_normal(h.shape)
    saved = {"LSTM": {"cellOutputFwd": c}, "GRU": {"outputFwd": h}}.get(cell, {})
    inputs = x | saved | {"sourceGradient": dy, "zState": z}
    grads = core.rnn_gradients(options(core, case), inputs)
    baseline_core = _native.load("baseline")
    baseline = baseline_core.rnn_gradients(options(baseline_core, case), inputs)
    assert list(grads) == list(case.returned) == list(baseline)
    for label in grads:
        assert_close(grads[label], baseline[label], "float64_medium", f"{level} d{label}")
