"""Every path that the thresholds of cpp/src/tuning.hpp choose between, forced by name
(toolkit/paths.py), checked against the NumPy reference: the forward outputs directly, the
gradients against central differences of the reference's loss along a random direction
(float64), in float32 (against the same numbers in float64) and in float64, at 1 and 2
threads. A moved threshold moves no test: each names its path."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit import (
    Case,
    Signals,
    assert_all_close,
    blas_threads,
    check_random_direction,
    float32_and_float64,
    forward,
    gradients,
    make_inputs,
    reference,
    signals,
)
from toolkit.paths import PRODUCTS, SPLITS, STEPS, SWEEPS, TILES, forced_paths

# N = 7 rows: every tile takes whole blocks and a remainder; H = 40: several panels per gate
# (float32 and float64), so threads sharing a step get different columns.
SIZES = {"T": 4, "N": 7, "I": 5, "H": 40}
CASES = [
    Case("singleGateRNN", "bi", activations={"activation": "tanh"}, initState="[N,DH]", mask="[T,N,DH]",
         **SIZES),
    Case("LSTM", "reverse", initState="[N,DH]", initCell="[N,DH]", peephole="[D4H]",
         mask="[T,N,DH]", **SIZES),
    Case("GRU", "fwd", initState="[N,DH]", mask="[T,N,DH]", secondaryBias=True,
         **SIZES),  # reset-before: the dependent product in every step
    Case("GRU", "bi", resetAfter=True, resetGateFirst=True, initState="[N,DH]", secondaryBias=True,
         **SIZES),
]
IDS = [f"{c.cell}-{c.id}" for c in CASES]


def widened(sig: Signals) -> Signals:
    return Signals(*(None if a is None else a.astype(np.float64) for a in sig))


def check_path(case, rng, threads, **paths):
    """Forward and gradients on the forced paths, float64 and float32, against the reference."""
    x = make_inputs(case, rng, scale=0.5)
    sig = signals(case, rng)
    with blas_threads(threads), forced_paths(**paths):
        out = forward(case, x)
        analytic = gradients(case, x, sig)
        case32 = case.but(dtype="float32")
        x32, x32_wide = float32_and_float64(case, rng, scale=0.5)
        sig32 = signals(case32, rng)
        out32 = forward(case32, x32)
        grads32 = gradients(case32, x32, sig32)
        grads32_wide = gradients(case, x32_wide, widened(sig32))
    expected = reference(case, x)
    assert_all_close({k: out[k] for k in expected}, expected, "float64", f"{case.id} {paths}")
    check_random_direction(case, x, sig, analytic, rng, through="reference")
    expected32 = reference(case, x32_wide)
    assert_all_close({k: out32[k] for k in expected32}, expected32, "float32_forward", str(paths))
    assert_all_close(grads32, grads32_wide, "float32_gradients", str(paths))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("product", PRODUCTS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_step_product(case, product, threads, rng):
    check_path(case, rng, threads, product=product)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tile", TILES)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_panel_tile(case, tile, threads, rng):
    check_path(case, rng, threads, product="packed", tile=tile)


# Each split with each sweep of the packed weights (the backward steps always pack R, so
# the sweep matters with the dot-product forward too).
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sweep", SWEEPS)
@pytest.mark.parametrize("product", ["packed", "dot"])  # the team has a branch for each
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_work_split(case, split, product, sweep, threads, rng):
    check_path(case, rng, threads, product=product, split=split, sweep=sweep)


# T = 5 steps, H = 72: float32, 5 panels a gate (one vector wide with AVX-512, two with
# AVX2), so the three-panel tile of one row leaves panels at the end it sweeps towards when
# the gates add up to no multiple of 3 (the LSTM's 20, the reset-before GRU's 10, the
# single-gate RNN's 5); N = 1 (few), 5 (some) and 20 (many rows, copied into the tile's
# layout).
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("N", [1, 5, 20])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_sweeps_way_changes_no_bit(case, N, split, rng):
    """Sweeping the weight panels from either end in turn (the default) gives the same bits
    as sweeping every step from the front: each element of a product is summed the same way,
    whichever end its panel is reached from."""
    assert_same_bits(case.but(N=N), rng, "sweep", SWEEPS, product="packed", split=split)


def assert_same_bits(case, rng, kind, values, **fixed):
    """Forward and gradients (float32, T = 5, H = 72, 2 threads) identical to the bit with
    each of `values` forced for the path `kind`, the paths `fixed` forced throughout."""
    sized = case.but(T=5, I=9, H=72, dtype="float32")
    x = make_inputs(sized, rng, scale=0.5)
    sig = signals(sized, rng)
    results = []
    for value in values:
        with blas_threads(2), forced_paths(**fixed, **{kind: value}):
            results.append({**forward(sized, x), **gradients(sized, x, sig)})
    first = results[0]
    for other, value in zip(results[1:], values[1:], strict=True):
        assert first.keys() == other.keys()
        for name, array in first.items():
            np.testing.assert_array_equal(array, other[name], err_msg=f"{name}, {kind}={value}")


# A team's forward step as one phase of units or as two phases (product, then rows), on the
# packed and the dot-product forward; cells with a dependent product (the reset-before GRU)
# always take the phases.
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("product", ["packed", "dot"])
@pytest.mark.parametrize("steps", STEPS)
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_team_step(case, steps, product, threads, rng):
    check_path(case, rng, threads, product=product, split="team", steps=steps)


@pytest.mark.parametrize("product", ["packed", "dot"])
@pytest.mark.parametrize("N", [1, 5, 20])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_team_steps_form_changes_no_bit(case, N, product, rng):
    """A team's forward step by units gives the same bits as its two phases: each element of
    the product is summed over k in the same order, and the element-wise math is the same."""
    assert_same_bits(case.but(N=N), rng, "steps", STEPS, product=product, split="team")


def test_forced_paths_are_given_back():
    from rnngraph._native import core

    with pytest.raises(RuntimeError), forced_paths(product="dot", tile="few", split="team",
                                                   sweep="ascending", steps="units"):
        assert core._forced_paths() == {"product": "dot", "tile": "few", "split": "team",
                                        "sweep": "ascending", "steps": "units"}
        raise RuntimeError
    assert core._forced_paths() == {"product": "auto", "tile": "auto", "split": "auto",
                                    "sweep": "auto", "steps": "auto"}
