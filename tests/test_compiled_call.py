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
from rows import BY_ID, Row

import rnngraph as rg
from rnngraph._native import core

QUICK = {"budget_s": 0.0, "min_reps": 3, "settle_s": 0.0}
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def small(cell: str, bidirectional: bool, resetAfter: bool = True) -> Row:
    """An inference row of ``cell`` with small sizes (T4 N3 I5 H4)."""
    return dataclasses.replace(BY_ID[2], cell=cell, T=4, N=3, I=5, H=4,
                               bidirectional=bidirectional, resetAfter=resetAfter)


def inputs(row: Row) -> dict[str, np.ndarray]:
    """Random float32 inputs of ``row`` by Swift label, in SPEC.md's layouts."""
    rng = np.random.default_rng(row.T * 100 + row.N)
    D, G, H = 2 if row.bidirectional else 1, GATES[row.cell], row.H
    shapes = {"source": (row.T, row.N, row.I),
              "recurrentWeight": (2, G * H, H) if row.bidirectional else (G * H, H),
              "inputWeight": (D * G * H, row.I), "bias": (D * G * H,),
              "initState": (row.N, D * H)}
    if row.cell == "LSTM":
        shapes["initCell"] = (row.N, D * H)
    if row.cell == "GRU" and row.resetAfter:
        shapes["secondaryBias"] = (D * H,)
    return {label: rng.uniform(-0.5, 0.5, shape).astype(np.float32)
            for label, shape in shapes.items()}


def graph_run(row: Row, x: dict[str, np.ndarray]) -> list[np.ndarray]:
    """Graph.run's outputs (h, and c for the LSTM) with the weights as constants, as the
    benchmark's step builds them (benchmarks/ours.py)."""
    g = rg.Graph()
    weights = ("recurrentWeight", "inputWeight", "bias", "secondaryBias")
    t = {k: g.constant(v) if k in weights else g.placeholder(shape=v.shape, dataType=rg.float32)
         for k, v in x.items()}
    if row.cell == "LSTM":
        outs = g.LSTM(descriptor=rg.LSTMDescriptor(bidirectional=row.bidirectional), **t)
    elif row.cell == "GRU":
        d = rg.GRUDescriptor(bidirectional=row.bidirectional, resetAfter=row.resetAfter)
        outs = g.GRU(descriptor=d, **t)
    else:
        d = rg.SingleGateRNNDescriptor(bidirectional=row.bidirectional,
                                       activation=rg.RNNActivation.tanh)
        outs = g.singleGateRNN(descriptor=d, **t)
    targets = list(outs[:2]) if row.cell == "LSTM" else [outs[0]]
    feeds = {t[k]: v for k, v in x.items() if k not in weights}
    results = g.run(feeds=feeds, targetTensors=targets)
    return [results[target] for target in targets]


CELLS = [("LSTM", True), ("GRU", True), ("GRU", False), ("RNN", True)]  # (cell, resetAfter)


@pytest.mark.parametrize("bidirectional", [False, True], ids=["fwd", "bi"])
@pytest.mark.parametrize(("cell", "resetAfter"), CELLS, ids=["LSTM", "lbr_gru", "gru", "RNN"])
def test_the_driver_computes_what_graph_run_computes(tmp_path: Path, cell: str,
                                                     resetAfter: bool,
                                                     bidirectional: bool) -> None:
    row = small(cell, bidirectional, resetAfter)
    x = inputs(row)
    for label, array in x.items():
        array.tofile(tmp_path / f"{label}.f32")
    assert run_json(compiled_call.command(row, 1, QUICK, tmp_path)) == {"io": True}
    expected = graph_run(row, x)
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
    assert list(times) == ["Graph.run", "op compute", "rnn_forward", "probe: pybind11 call",
                           "probe: fastcall"]
    for depth in times.values():
        assert depth["warm"] > 0 and depth["after a pass"] > 0
