"""The oneDNN benchmark peer (benchmarks/onednn/rnn_driver.cpp) computes the rows' problem:
its outputs and every gradient, on small inputs, equal rnngraph's after mapping layouts
(tests/reference/onednn_mapping.py). oneDNN runs in float32, rnngraph in float64.

The driver is built against Debian's libdnnl-dev, which the README's test command installs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from reference import onednn_mapping as m
from toolkit import Case, assert_close, final, forward, gradients, make_inputs, signals

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import onednn_peer

CASES = [
    Case("LSTM", direction=direction, initState="[N,DH]", initCell="[N,DH]", T=4, N=3, I=5, H=4)
    for direction in ("fwd", "bi")
] + [
    Case("GRU", direction=direction, resetAfter=after, secondaryBias=after, initState="[N,DH]",
         T=4, N=3, I=5, H=4)
    for direction in ("fwd", "bi") for after in (False, True)
] + [
    Case("singleGateRNN", direction=direction, activations={"act": "tanh"}, initState="[N,DH]",
         T=4, N=3, I=5, H=4)
    for direction in ("fwd", "bi")
]
BENCHMARK_CELL = {"LSTM": "LSTM", "GRU": "GRU", "singleGateRNN": "RNN"}  # rows.Row.cell


def driver_cell(case: Case) -> str:
    return onednn_peer.primitive(BENCHMARK_CELL[case.cell], case.resetAfter)


def onednn_inputs(case: Case, x: dict, sig) -> dict:
    """rnngraph's inputs and cotangents in oneDNN's user layouts."""
    D, G, H = case.D, case.G, case.H
    out = {"src_layer": x["source"], "src_iter": m.states(x["initState"], D),
           "weights_layer": m.weights(x["inputWeight"], D, G, H),
           "weights_iter": m.weights(x["recurrentWeight"], D, G, H),
           "bias": m.bias(x["bias"], D, G, H, x.get("secondaryBias")),
           "diff_dst_layer": sig.dy, "diff_dst_iter": m.states(sig.dS, D)}
    if case.cell == "LSTM":
        out |= {"src_iter_c": m.states(x["initCell"], D), "diff_dst_iter_c": m.states(sig.dC, D)}
    return out


def run_driver(case: Case, inputs: dict, folder: Path) -> dict:
    """One oneDNN training step on ``inputs``; every output, by oneDNN's name."""
    shapes = {}
    for name, array in inputs.items():
        np.ascontiguousarray(array, np.float32).tofile(folder / f"{name}.f32")
        shapes[name] = np.shape(array)
    line = onednn_peer.command(driver_cell(case), case.T, case.N, case.I, case.H,
                               case.bidirectional, True, io_dir=folder)
    onednn_peer.run(line, threads=1, timeout_s=60)
    D, N, H = case.D, case.N, case.H
    state = (1, D, N, H)
    expected = {"dst_layer": (case.T, N, D * H), "dst_iter": state,
                "diff_src_layer": shapes["src_layer"], "diff_src_iter": state,
                "diff_weights_layer": shapes["weights_layer"],
                "diff_weights_iter": shapes["weights_iter"], "diff_bias": shapes["bias"]}
    if case.cell == "LSTM":
        expected |= {"dst_iter_c": state, "diff_src_iter_c": state}
    return {name: np.fromfile(folder / f"{name}.f32", np.float32).reshape(shape)
            for name, shape in expected.items()}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{driver_cell(c)}-{c.direction}")
def test_driver_matches_rnngraph(case, rng, tmp_path):
    x = make_inputs(case, rng)
    sig = signals(case, rng)
    out = run_driver(case, onednn_inputs(case, x, sig), tmp_path)

    mine = forward(case, x)
    assert_close(out["dst_layer"], mine["h"], "float32_forward", "h")
    assert_close(m.states_back(out["dst_iter"]), final(mine["h"], case), "float32_forward",
                 "final state")
    if case.cell == "LSTM":
        assert_close(m.states_back(out["dst_iter_c"]), final(mine["c"], case),
                     "float32_forward", "final cell")

    grads = gradients(case, x, sig)
    D = case.D
    bias, secondary = m.bias_back(out["diff_bias"], case.G)
    theirs = {"source": out["diff_src_layer"],
              "inputWeight": m.weights_back(out["diff_weights_layer"], D).reshape(-1, case.I),
              "recurrentWeight": m.weights_back(out["diff_weights_iter"], D).reshape(
                  grads["recurrentWeight"].shape),
              "bias": bias, "initState": m.states_back(out["diff_src_iter"])}
    if case.cell == "LSTM":
        theirs["initCell"] = m.states_back(out["diff_src_iter_c"])
    if secondary is not None:
        theirs["secondaryBias"] = secondary
    assert set(theirs) == set(grads) - ({"secondaryBias"} if secondary is None else set())
    for label, value in theirs.items():
        assert_close(value, grads[label], "float32_gradients", label)
