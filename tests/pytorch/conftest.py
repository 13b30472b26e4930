"""Shared fixtures of the rnngraph.torch tests: raw-op inputs in SPEC.md section 1 layouts
(keyed by the Swift labels, as NumPy float64 arrays from the seeded ``rng`` fixture) and the
independent NumPy reference run on them; and rnngraph's own workers back in charge once these
tests are done (importing rnngraph.torch puts every rnngraph call of the process on torch's
OpenMP threads, and the tests after this folder check rnngraph's own runtime)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest

import reference

GATES = {"single_gate_rnn": 1, "lstm": 4, "gru": 3}


@pytest.fixture(scope="module", autouse=True)
def torch_pool_in_this_module():
    """Each test module here runs with rnngraph.torch's default pool (torch's threads); the
    top conftest's module fixture leaves rnngraph's own workers in charge after it."""
    import rnngraph.torch

    rnngraph.torch.set_thread_pool("torch")
REFERENCES = {"single_gate_rnn": reference.single_gate_rnn, "lstm": reference.lstm,
              "gru": reference.gru}


def _draw_inputs(rng: np.random.Generator, cell: str, options: dict[str, Any], *, T: int = 3,
                 N: int = 2, I: int = 2, H: int = 2, inputWeight: bool = True,
                 bias: bool = True, initState: bool = True, peephole: bool = False,
                 secondaryBias: bool | None = None, mask: str | None = None,
                 scale: float = 0.6) -> dict[str, np.ndarray]:
    """The forward op's inputs for ``cell`` with descriptor ``options``. States are non-zero
    ``[N, D·H]``; ``peephole`` is ``[4H]`` or bidirectional ``[2, 4H]``; ``secondaryBias``
    defaults to given when the GRU is resetAfter with a bias; ``mask`` is None, "binary"
    (0/1, ``[T, N, D·H]``) or "fraction" (in (0, 1), ``[T, N, 1]``)."""
    D = 2 if options.get("bidirectional") else 1
    GH = GATES[cell] * H

    def normal(*shape: int, size: float = scale) -> np.ndarray:
        return size * rng.standard_normal(shape)

    inputs = {"source": normal(T, N, I if inputWeight else D * GH, size=1.0),
              "recurrentWeight": normal(2, GH, H) if D == 2 else normal(GH, H)}
    if inputWeight:
        inputs["inputWeight"] = normal(D * GH, I)
    if bias:
        inputs["bias"] = normal(D * GH)
    if initState:
        inputs["initState"] = normal(N, D * H)
        if cell == "lstm":
            inputs["initCell"] = normal(N, D * H)
    if peephole:
        inputs["peephole"] = normal(2, 4 * H) if D == 2 else normal(4 * H)
    if secondaryBias is None:
        secondaryBias = cell == "gru" and bias and bool(options.get("resetAfter"))
    if secondaryBias:
        inputs["secondaryBias"] = normal(D * H)
    if mask == "binary":
        inputs["mask"] = (rng.random((T, N, D * H)) < 0.6).astype(np.float64)
    elif mask == "fraction":
        inputs["mask"] = rng.uniform(0.1, 0.9, (T, N, 1))
    elif mask is not None:
        raise ValueError(f"unknown mask kind {mask!r}")
    return inputs


def _run_reference(cell: str, inputs: dict[str, np.ndarray], options: dict[str, Any],
                   return_preactivations: bool = False) -> Any:
    """The NumPy reference (tests/reference/numpy_rnn.py) on the op's inputs and options."""
    return REFERENCES[cell](**inputs, **options, return_preactivations=return_preactivations)


@pytest.fixture
def draw_inputs(rng):
    """``draw_inputs(cell, options, **sizes_and_inputs)``: see ``_draw_inputs``."""
    return functools.partial(_draw_inputs, rng)


@pytest.fixture
def run_reference():
    """``run_reference(cell, inputs, options, return_preactivations=False)``."""
    return _run_reference
