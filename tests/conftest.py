"""Shared fixtures; the run ends with the worst finite-difference error seen."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import gradcheck


@pytest.fixture
def rng(request):
    # A seed per test, stable across runs and processes (str hashes are salted per process).
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


def pytest_terminal_summary(terminalreporter):
    if gradcheck.WORST["error"] is not None:
        terminalreporter.write_line(
            f"worst finite-difference gradient error: {gradcheck.WORST['error']:.3e} "
            f"({gradcheck.WORST['where']})"
        )
