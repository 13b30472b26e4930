"""The compiled-call benchmark tool (benchmarks/compiled_call.py, drivers/compiled_call.cpp)
computes the rows' problem: its outputs equal Graph.run's on the same inputs, for every cell
it takes, in one direction and in both; it times the inference rows, and refuses the others.
call_overhead.py times a call at every depth, the lean-binding probe's too.

The driver is built against the core's static library of this CPU's kernel level, with the
same sources and flags as the installed module's, so the two agree bit for bit.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import call_overhead
import compiled_call
from driver_process import run_json
from ours import row_graph, row_values
from rows import BY_ID, Row

from rnngraph._native import core

QUICK = {"budget_s": 0.0, "min_reps": 3, "settle_s": 0.0}


def small(cell: str, bidirectional: bool, resetAfter: bool = True) -> Row:
    """An inference row of ``cell`` with small sizes (T4 N3 I5 H4)."""
    return dataclasses.replace(BY_ID[2], cell=cell, T=4, N=3, I=5, H=4,
                               bidirectional=bidirectional, resetAfter=resetAfter)


CELLS = [("LSTM", True), ("GRU", True), ("GRU", False), ("RNN", True)]  # (cell, resetAfter)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["fwd", "bi"])
@pytest.mark.parametrize(("cell", "resetAfter"), CELLS, ids=["LSTM", "lbr_gru", "gru", "RNN"])
def test_the_driver_computes_what_graph_run_computes(tmp_path: Path, cell: str,
                                                     resetAfter: bool,
                                                     bidirectional: bool) -> None:
    row = small(cell, bidirectional, resetAfter)
    values = row_values(row)
    for label, array in values.items():
        array.tofile(tmp_path / f"{label}.f32")
    assert run_json(compiled_call.command(row, 1, QUICK, tmp_path)) == {"io": True}
    g, feeds, targets = row_graph(row, values)  # the benchmark's own step (ours.py)
    results = g.run(feeds=feeds, targetTensors=targets)
    expected = [results[t] for t in targets]  # h, and c for the LSTM
    labels = ["output", "cellOutput"][:len(expected)]
    for label, want in zip(labels, expected):
        got = np.fromfile(tmp_path / f"{label}.f32", np.float32).reshape(want.shape)
        np.testing.assert_array_equal(got, want, err_msg=label)


def test_the_kernel_level_is_the_one_rnngraph_runs() -> None:
    assert compiled_call.kernel_level() == core.kernel_level


@pytest.mark.parametrize("row", [1, 2, 4])  # LSTM bidirectional, GRU resetAfter, LSTM
@pytest.mark.parametrize("threads", [1, 2])
def test_an_inference_row_is_timed(row: int, threads: int) -> None:
    result = compiled_call.measure(BY_ID[row], threads, QUICK)
    assert result["reps"] == 3
    assert 0 < result["min_ms"] <= result["median_ms"] <= result["p90_ms"]


@pytest.mark.parametrize("row", [BY_ID[7], dataclasses.replace(BY_ID[3], dtype="float64")],
                         ids=["train", "float64"])
def test_rows_it_does_not_time_are_refused(row: Row) -> None:
    with pytest.raises(ValueError, match="float32 inference rows only"):
        compiled_call.command(row, 1, QUICK)


def test_the_call_is_timed_at_every_depth_the_probe_included() -> None:
    times = call_overhead.one_process(1, calls=5, evict_mib=0.01, lean=True)
    assert list(times) == ["Graph.run", "Executable.run", "op compute", "prepared run", "rnn_forward",
                           "probe: pybind11 call", "probe: fastcall"]
    for depth in times.values():
        assert depth["warm"] > 0 and depth["after a pass"] > 0
