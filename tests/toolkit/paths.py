"""Forcing the kernels' paths by name (rnngraph._native.core._force_paths): the step
product's kernel, the panel kernel's tile, the work split, the time loops' sweep of the
weight panels and how a team runs each forward step, regardless of shape."""

from __future__ import annotations

import contextlib

from rnngraph._native import core

PRODUCTS = ("packed", "dot", "blas", "small")  # the forward step's product hm·Rᵀ
TILES = ("few", "some", "many")  # the panel kernel's register tile (every packed product)
SPLITS = ("serial", "rows", "team")  # how a call spends its threads on the time loops
SWEEPS = ("alternating", "ascending")  # which way the time loops' steps sweep the weight panels
STEPS = ("units", "phases")  # a team's forward step: one phase of units, or product then rows


@contextlib.contextmanager
def forced_paths(product: str = "auto", tile: str = "auto", split: str = "auto",
                 sweep: str = "auto", steps: str = "auto"):
    """Run the block with these paths forced, then give the choice back to the thresholds."""
    core._force_paths(product=product, tile=tile, split=split, sweep=sweep, steps=steps)
    try:
        yield
    finally:
        core._force_paths()
