"""Shared fixtures; the run ends with the worst finite-difference error seen, overall and per
gradient rule of the Graph's ops (tests/graph_ops' checks through ``Graph.gradients``).
Every test module leaves rnngraph's own workers in charge, whatever order modules run in."""

from __future__ import annotations

import sys
import zlib

import numpy as np
import pytest

from toolkit import WORST, WORST_BY_RULE


@pytest.fixture(scope="module", autouse=True)
def rnngraphs_own_workers_after_the_module():
    """Importing rnngraph.torch puts every rnngraph call of the process on torch's OpenMP
    threads; tests/test_runtime.py and others check rnngraph's own runtime, so each module
    that imported it hands the pool back when it ends."""
    yield
    if "rnngraph.torch" in sys.modules:
        sys.modules["rnngraph.torch"].set_thread_pool("rnngraph")


@pytest.fixture
def rng(request):
    """The one source of random numbers: seeded from the crc32 of the test's node id, so a
    test sees the same numbers in every run and process (``hash()`` of a str is salted per
    process, crc32 is not). Tests that need several generators derive them from this one
    (``rng.spawn(k)``)."""
    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


def pytest_terminal_summary(terminalreporter):
    if WORST["error"] is not None:
        terminalreporter.write_line(
            f"worst finite-difference gradient error: {WORST['error']:.3e} ({WORST['where']})"
        )
    if WORST_BY_RULE:
        terminalreporter.write_line(
            "worst finite-difference error per gradient rule (Graph.gradients checks, float64; "
            "a check through several op kinds counts for each):"
        )
        for rule, (error, where) in sorted(WORST_BY_RULE.items(), key=lambda item: -item[1][0]):
            terminalreporter.write_line(f"  {rule:<32} {error:.2e}  ({where})")
