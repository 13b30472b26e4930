"""benchmarks/adapter_floor.py: the thinnest autograd.Function around rnngraph's kernels must
compute what the adapter computes (else its time says nothing about the adapter's cost); its
timings are checked for form only."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import adapter_floor
from rows import BY_ID


def test_floor_and_adapter_compute_the_same_gradients():
    paired, leaves = adapter_floor.steps(BY_ID[8])
    gradients = {}
    for name, step in paired.items():
        step()
        gradients[name] = [leaf.grad.clone() for leaf in leaves]
    assert len(gradients["floor"]) == 6
    for f, a in zip(gradients["floor"], gradients["adapter"]):
        assert f.shape == a.shape
        torch.testing.assert_close(f, a, rtol=1e-6, atol=1e-6)


def test_measure_reports_both_steps_split_at_the_kernels():
    r = adapter_floor.measure(8, 1, reps=2)
    for name in ("floor", "adapter"):
        assert 0 < r[f"{name}_outside_ms"] < r[f"{name}_kernels_ms"] < r[f"{name}_ms"] * 1.01


@pytest.mark.parametrize("row", [9, 11, 12])  # an RNN, a bidirectional LSTM, a GRU
def test_floor_refuses_rows_it_is_not_written_for(row):
    with pytest.raises(ValueError, match="unidirectional LSTM"):
        adapter_floor.steps(BY_ID[row])
