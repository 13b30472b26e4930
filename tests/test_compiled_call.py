"""The compiled-call benchmark tool (benchmarks/compiled_call.py, drivers/compiled_call.cpp):
it builds against the core's static library of this CPU's kernel level and times each cell
of the inference rows, and it refuses the rows it does not time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import compiled_call
from rows import BY_ID

from rnngraph._native import supported_levels

QUICK = {"budget_s": 0.0, "min_reps": 3, "settle_s": 0.0}


def test_the_kernel_level_is_the_one_rnngraph_runs() -> None:
    assert compiled_call.kernel_level() in supported_levels()


@pytest.mark.parametrize("row", [1, 2, 4])  # LSTM bidirectional, GRU resetAfter, LSTM
@pytest.mark.parametrize("threads", [1, 2])
def test_an_inference_row_is_timed(row: int, threads: int) -> None:
    result = compiled_call.measure(BY_ID[row], threads, QUICK)
    assert result["reps"] == 3
    assert 0 < result["min_ms"] <= result["median_ms"] <= result["p90_ms"]
    assert result["level"] == compiled_call.kernel_level()


@pytest.mark.parametrize("row", [7, 16])  # a train row, a float64 row
def test_rows_it_does_not_time_are_refused(row: int) -> None:
    with pytest.raises(ValueError, match="float32 inference rows only"):
        compiled_call.measure(BY_ID[row], 1, QUICK)
