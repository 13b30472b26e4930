"""The raw ops' forward outputs against the independent NumPy reference
(tests/reference/numpy_rnn.py), float64, for the options torch.nn cannot express: hardSigmoid
and other gate activations, peepholes, forgetGateLast, the reset-before GRU, either GRU gate
order, flipZ, reverse-only, masks, no inputWeight.

Every output is checked: h ``[T, N, D·H]``; ``state`` (each direction's h at its last processed
step: t = T−1 forward, t = 0 reverse; SPEC.md section 4); the LSTM's final ``cell`` and cell
sequence; zState (activated gates or the single gate's pre-activation, in descriptor order).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rnngraph as rg
import rnngraph.torch  # registers torch.ops.rnngraph.*
from toolkit import assert_close

A = rg.RNNActivation
HARD = A.hardSigmoid
DESCRIPTORS = {"single_gate_rnn": rg.SingleGateRNNDescriptor, "lstm": rg.LSTMDescriptor,
               "gru": rg.GRUDescriptor}
T, N, I, H = 4, 3, 3, 3


def case(cell: str, name: str, inputs: dict | None = None, **options):
    return pytest.param(cell, options, inputs or {}, id=f"{cell}-{name}")


CASES = [
    *(case("single_gate_rnn", f"activation={value.name}", activation=value) for value in A),
    case("single_gate_rnn", "reverse", reverse=True, activation=A.tanh),
    case("single_gate_rnn", "mask01-bidirectional", {"mask": "binary"}, bidirectional=True),
    case("single_gate_rnn", "no_inputWeight-hardSigmoid", {"inputWeight": False, "scale": 3.0},
         activation=HARD),
    case("lstm", "all_hardSigmoid", {"scale": 3.0}, inputGateActivation=HARD,
         forgetGateActivation=HARD, cellGateActivation=HARD, outputGateActivation=HARD,
         activation=HARD),
    case("lstm", "other_activations", inputGateActivation=A.tanh, forgetGateActivation=A.none,
         cellGateActivation=A.relu, outputGateActivation=HARD, activation=A.sigmoid),
    case("lstm", "peephole", {"peephole": True}),
    case("lstm", "peephole-bidirectional[2,4H]", {"peephole": True}, bidirectional=True),
    case("lstm", "forgetGateLast", forgetGateLast=True),
    case("lstm", "forgetGateLast-peephole-hardSigmoid_forget", {"peephole": True},
         forgetGateLast=True, forgetGateActivation=HARD),
    case("lstm", "reverse", reverse=True),
    case("lstm", "reverse-mask_fraction", {"mask": "fraction"}, reverse=True),
    case("lstm", "bidirectional-mask01-no_inputWeight", {"mask": "binary", "inputWeight": False},
         bidirectional=True),
    *(case("gru", f"resetAfter={after}-resetGateFirst={first}-flipZ={flip}", resetAfter=after,
           resetGateFirst=first, flipZ=flip)
      for after in (False, True) for first in (False, True) for flip in (False, True)),
    case("gru", "reset_before-reverse-hardSigmoid", reverse=True, updateGateActivation=HARD,
         resetGateActivation=HARD),
    case("gru", "reset_before-bidirectional-mask_fraction", {"mask": "fraction"},
         bidirectional=True),
    case("gru", "resetAfter-bidirectional-mask01", {"mask": "binary"}, resetAfter=True,
         bidirectional=True),
    case("gru", "flipZ-no_inputWeight-relu_output", {"inputWeight": False}, flipZ=True,
         outputGateActivation=A.relu),
]


def _assert_both_pieces(cell: str, options: dict, preactivations: dict) -> None:
    """Each relu or hardSigmoid slot sees values on both sides of a kink (else the case would
    only test a straight line)."""
    descriptor = DESCRIPTORS[cell](**options).as_dict()
    for slot, values in preactivations.items():
        if descriptor[slot] == A.relu:
            assert np.any(values < 0) and np.any(values > 0), slot
        if descriptor[slot] == HARD:
            assert np.any(np.abs(values) < 2.5) and np.any(np.abs(values) > 2.5), slot


def _last_steps(sequence: np.ndarray, options: dict) -> np.ndarray:
    """Each direction's value at its last processed step, ``[N, D·H]``."""
    if options.get("bidirectional"):
        return np.concatenate((sequence[-1, :, :H], sequence[0, :, H:]), axis=1)
    return sequence[0] if options.get("reverse") else sequence[-1]


def _call(cell: str, inputs: dict[str, np.ndarray], options: dict, training: bool) -> dict:
    op = getattr(torch.ops.rnngraph, cell)
    outputs = op(**{k: torch.from_numpy(v) for k, v in inputs.items()}, **options,
                 training=training)
    names = ("h", "state", "cell", "c", "zState") if cell == "lstm" else ("h", "state", "zState")
    assert len(outputs) == len(names)
    return {name: output.numpy() for name, output in zip(names, outputs)}


@pytest.mark.parametrize(("cell", "options", "spec"), CASES)
def test_forward_matches_reference(cell, options, spec, draw_inputs, run_reference):
    inputs = draw_inputs(cell, options, T=T, N=N, I=I, H=H, **{"scale": 1.2, **spec})
    expected, preactivations = run_reference(cell, inputs, options, return_preactivations=True)
    _assert_both_pieces(cell, options, preactivations)
    expected["state"] = _last_steps(expected["h"], options)
    if cell == "lstm":
        expected["cell"] = _last_steps(expected["c"], options)
    got = _call(cell, inputs, options, training=True)
    assert set(got) == set(expected)
    for name, value in expected.items():
        assert got[name].dtype == np.float64
        assert_close(got[name], value, "float64", f"{cell} {name}")
    # Without training, the same results and an empty zState.
    inference = _call(cell, inputs, options, training=False)
    assert inference.pop("zState").shape == (0,)
    for name, value in inference.items():
        np.testing.assert_array_equal(value, got[name], err_msg=name)


def test_lstm_flat_bidirectional_peephole(draw_inputs, run_reference):
    """A bidirectional peephole may also be given as ``[8H]`` (SPEC.md section 1)."""
    options = {"bidirectional": True}
    inputs = draw_inputs("lstm", options, T=T, N=N, I=I, H=H, peephole=True)
    stacked = _call("lstm", inputs, options, training=True)
    flat = _call("lstm", {**inputs, "peephole": inputs["peephole"].reshape(8 * H)}, options,
                 training=True)
    for name, value in stacked.items():
        np.testing.assert_array_equal(flat[name], value, err_msg=name)
    assert_close(stacked["h"], run_reference("lstm", inputs, options)["h"], "float64", "h")


@pytest.mark.parametrize("cell", ["single_gate_rnn", "lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_no_steps_keeps_initial_state(cell, bidirectional, draw_inputs):
    """With T = 0 the final state (and cell) is the initial one, h and zState are empty."""
    options = {"bidirectional": bidirectional}
    inputs = draw_inputs(cell, options, T=0, N=N, I=I, H=H)
    got = _call(cell, inputs, options, training=True)
    D = 2 if bidirectional else 1
    assert got["h"].shape == (0, N, D * H)
    assert got["zState"].shape == (0, N, D * {"single_gate_rnn": 1, "lstm": 4, "gru": 3}[cell] * H)
    np.testing.assert_array_equal(got["state"], inputs["initState"])
    if cell == "lstm":
        np.testing.assert_array_equal(got["cell"], inputs["initCell"])
