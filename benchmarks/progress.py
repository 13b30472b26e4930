"""The progress bar on stderr: tqdm where installed, else a quiet stand-in."""

from __future__ import annotations

import sys
from typing import Any


class _Quiet:
    """tqdm's interface, doing nothing (tqdm is optional)."""

    def update(self, n: int = 1) -> None:
        """Nothing to advance."""

    def set_description(self, text: str) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def bar(total: int) -> Any:
    """A progress bar of ``total`` measurements (tqdm's, or a quiet stand-in)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _Quiet()
    return tqdm(total=total, unit="meas", file=sys.stderr)
