"""benchmarks/adapter_overhead.py: the adapter's paired cost in one process, against the Graph
and against torch.nn (one small row, one rep: the figures are timings, so only their form and
the pairing are checked)."""

import math
import sys
from pathlib import Path

import pytest
import torch  # noqa: F401  (the test extra installs it; no skip)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import adapter_overhead


@pytest.mark.parametrize("baseline", ["graph", "torch"])
def test_paired_cost_against_each_baseline(baseline):
    r = adapter_overhead.paired(8, 1, reps=2, baseline=baseline)
    assert r["baseline"] == baseline and r["row"] == 8 and r["threads"] == 1
    assert r["baseline_ms"] > 0 and r["adapter_ms"] > 0
    assert math.isfinite(r["paired_cost_ms"])
    assert r["cost_share"] == pytest.approx(r["paired_cost_ms"] / r["baseline_ms"])


def test_baseline_steps_are_the_graph_and_torch_nn():
    graph = adapter_overhead.paired_steps(8, "graph")["baseline"]
    torch_nn = adapter_overhead.paired_steps(8, "torch")["baseline"]
    assert graph.__module__ == "ours" and torch_nn.__module__ == "peers"


def test_language_model_step_pairs_with_torch_nn_only():
    r = adapter_overhead.paired("LM", 1, reps=1, baseline="torch")
    assert r["row"] == "LM" and r["baseline_ms"] > 0 and r["adapter_ms"] > 0
    with pytest.raises(ValueError, match="torch.nn only"):
        adapter_overhead.paired_steps("LM", "graph")


def test_kernel_split_sees_the_same_kernels_and_restores_the_core():
    from rnngraph._native import core

    originals = [getattr(core, name) for name in adapter_overhead.KERNELS]
    r = adapter_overhead.paired(8, 1, reps=2, baseline="graph", kernels=True)
    for name in ("baseline", "adapter"):
        # each step runs row 8's forward and gradient kernels; the rest is what the step adds
        assert 0 < r[f"{name}_kernels_ms"]
        assert 0 < r[f"{name}_outside_ms"] < r[f"{name}_kernels_ms"]
    assert [getattr(core, name) for name in adapter_overhead.KERNELS] == originals


def test_kernel_clock_times_each_kernel_call():
    from rnngraph._native import core

    forward = core.rnn_forward
    step = adapter_overhead.paired_steps(8, "graph")["adapter"]
    with adapter_overhead.kernel_clock() as spent:
        assert core.rnn_forward is not forward
        step()
        assert len(spent) == 2 and all(s > 0 for s in spent)  # forward, then gradients
    assert core.rnn_forward is forward
