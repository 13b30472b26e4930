"""rnngraph.torch's modules against their torch.nn twins.

``from_torch`` turns a single-layer ``torch.nn.RNN`` (tanh or relu), ``LSTM`` or ``GRU`` into
the rnngraph module; both then see the same input, a non-zero hx and the same loss
``Σ out·dy + Σ h_n·dS (+ Σ c_n·dC)``. The outputs, the final states and every gradient (input,
h0, c0, each parameter) must agree. torch's parameter gradients are mapped into rnngraph's
layout by the independent tests/reference/torch_mapping.py: the summed bias gets the gradient
of b_ih (equal to b_hh's), a GRU's candidate bias that of b_in and secondaryBias that of b_hn,
directions stacked (recurrentWeight) or concatenated (the others).
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import rnngraph as rg
import rnngraph.torch as rt
from reference import torch_grads_to_rnngraph
from reference.torch_mapping import (
    gru_params_from_torch,
    lstm_params_from_torch,
    rnn_params_from_torch,
)
from toolkit import assert_close

# name: (torch.nn class, its keywords, rnngraph class, reference cell name, params mapping)
CELLS = {
    "rnn_tanh": (nn.RNN, {"nonlinearity": "tanh"}, rt.SingleGateRNN, "rnn",
                 rnn_params_from_torch),
    "rnn_relu": (nn.RNN, {"nonlinearity": "relu"}, rt.SingleGateRNN, "rnn",
                 rnn_params_from_torch),
    "lstm": (nn.LSTM, {}, rt.LSTM, "lstm", lstm_params_from_torch),
    "gru": (nn.GRU, {}, rt.GRU, "gru", gru_params_from_torch),
}
T, N, I, H = 5, 3, 4, 3
# float64: only summation order differs; float32: a sanity check at the float32 bounds.
TOLERANCES = {torch.float64: ("float64", "float64"),
              torch.float32: ("float32_forward", "float32_gradients")}


def _torch_twin(cell: str, bidirectional: bool, bias: bool, dtype: torch.dtype) -> nn.Module:
    torch_type, keywords, *_ = CELLS[cell]
    module = torch_type(I, H, bias=bias, bidirectional=bidirectional, dtype=dtype, **keywords)
    with torch.no_grad():  # larger than torch's ±1/√H init so that the cells are not linear
        for parameter in module.parameters():
            parameter.uniform_(-0.8, 0.8)
    return module


def _run(module: nn.Module, has_cell: bool, inputs: dict[str, torch.Tensor],
         signals: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The outputs and the input/state gradients of ``module`` under the loss."""
    x, h0, c0 = (inputs[k].clone().requires_grad_() for k in ("x", "h0", "c0"))
    if has_cell:
        out, (h_n, c_n) = module(x, (h0, c0))
        loss = (c_n * signals["dC"]).sum()
    else:
        out, h_n = module(x, h0)
        c_n, loss = None, 0
    loss = loss + (out * signals["dy"]).sum() + (h_n * signals["dS"]).sum()
    loss.backward()
    result = {"output": out, "h_n": h_n, "x": x.grad, "h0": h0.grad}
    if has_cell:
        result.update(c_n=c_n, c0=c0.grad)
    return {name: value.detach() for name, value in result.items()}


def _draw(bidirectional: bool, dtype: torch.dtype) -> tuple[dict, dict]:
    D = 2 if bidirectional else 1
    inputs = {"x": torch.randn(T, N, I, dtype=dtype),
              "h0": 0.5 * torch.randn(D, N, H, dtype=dtype),
              "c0": 0.5 * torch.randn(D, N, H, dtype=dtype)}
    signals = {"dy": torch.randn(T, N, D * H, dtype=dtype),
               "dS": torch.randn(D, N, H, dtype=dtype), "dC": torch.randn(D, N, H, dtype=dtype)}
    return inputs, signals


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("cell", CELLS)
def test_matches_torch_nn(cell, bidirectional, bias, dtype):
    torch.manual_seed(1234)
    theirs = _torch_twin(cell, bidirectional, bias, dtype)
    ours_type, name, params_from_torch = CELLS[cell][2:]
    ours = ours_type.from_torch(theirs)
    has_cell = cell == "lstm"
    forward_tolerance, gradient_tolerance = TOLERANCES[dtype]

    # from_torch's weights are torch's in rnngraph's layout (the reference sums biases in
    # float64, so a float32 sum differs by a rounding).
    expected_parameters = params_from_torch(theirs)
    if not bias:
        expected_parameters = {k: v for k, v in expected_parameters.items()
                               if k in ("inputWeight", "recurrentWeight")}
    actual_parameters = dict(ours.named_parameters())
    assert set(actual_parameters) == set(expected_parameters)
    for label, value in expected_parameters.items():
        assert actual_parameters[label].dtype == dtype
        assert_close(actual_parameters[label].detach().double().numpy(), value, forward_tolerance,
                     label)

    inputs, signals = _draw(bidirectional, dtype)
    got, want = _run(ours, has_cell, inputs, signals), _run(theirs, has_cell, inputs, signals)
    worst = 0.0
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key].dtype == dtype and got[key].shape == value.shape, key
        tolerance = forward_tolerance if key in ("output", "h_n", "c_n") else gradient_tolerance
        worst = max(worst, assert_close(got[key].numpy(), value.numpy(), tolerance, key))

    expected_grads = torch_grads_to_rnngraph(name, theirs)
    for label, parameter in ours.named_parameters():
        assert parameter.grad is not None, label
        worst = max(worst, assert_close(parameter.grad.numpy(), expected_grads[label],
                                        gradient_tolerance, f"d{label}"))
    print(f"\nworst difference against torch.nn, {cell} {'bi' if bidirectional else 'uni'} "
          f"{'bias' if bias else 'no bias'} {dtype}: {worst:.2e}")


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("cell", CELLS)
def test_h_n_is_each_directions_last_processed_step(cell, bidirectional):
    """torch.nn's h_n is the forward direction's output at t = T−1 and the reverse one's at
    t = 0; rnngraph's module gives the same slices of its own output."""
    torch.manual_seed(7)
    ours = CELLS[cell][2].from_torch(_torch_twin(cell, bidirectional, True, torch.float64))
    inputs, _ = _draw(bidirectional, torch.float64)
    hx = (inputs["h0"], inputs["c0"]) if cell == "lstm" else inputs["h0"]
    with torch.no_grad():
        output, state = ours(inputs["x"], hx)
    h_n = state[0] if cell == "lstm" else state
    torch.testing.assert_close(h_n[0], output[T - 1, :, :H], rtol=0, atol=0)
    if bidirectional:
        torch.testing.assert_close(h_n[1], output[0, :, H:], rtol=0, atol=0)


# rnngraph-side descriptors torch.nn can express (other gate orders are reordered by to_torch).
ROUND_TRIPS = {
    "rnn_tanh": (rt.SingleGateRNN, nn.RNN, {"activation": rg.RNNActivation.tanh}),
    "rnn_relu": (rt.SingleGateRNN, nn.RNN, {"activation": rg.RNNActivation.relu}),
    "lstm": (rt.LSTM, nn.LSTM, {}),
    "lstm_forgetGateLast": (rt.LSTM, nn.LSTM, {"forgetGateLast": True}),
    "gru_resetGateFirst": (rt.GRU, nn.GRU, {"resetAfter": True, "resetGateFirst": True}),
    "gru_zro": (rt.GRU, nn.GRU, {"resetAfter": True}),
}


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("variant", ROUND_TRIPS)
def test_to_torch_round_trip(variant, bidirectional, bias):
    """to_torch() computes what the rnngraph module computes (outputs, states, input and state
    gradients), and from_torch(to_torch()) gives back an equivalent rnngraph module."""
    torch.manual_seed(99)
    ours_type, torch_type, properties = ROUND_TRIPS[variant]
    descriptor = ours_type._cell.spec.descriptor_type(bidirectional=bidirectional, **properties)
    ours = ours_type(I, H, bias=bias, descriptor=descriptor, dtype=torch.float64)
    with torch.no_grad():
        for parameter in ours.parameters():
            parameter.uniform_(-0.8, 0.8)
    theirs = ours.to_torch()
    assert type(theirs) is torch_type
    assert theirs.bidirectional == bidirectional and theirs.bias == bias
    again = ours_type.from_torch(theirs)

    has_cell = ours_type is rt.LSTM
    inputs, signals = _draw(bidirectional, torch.float64)
    want = _run(ours, has_cell, inputs, signals)
    for module in (theirs, again):
        got = _run(module, has_cell, inputs, signals)
        for key, value in want.items():
            assert_close(got[key].numpy(), value.numpy(), "float64", f"{type(module)} {key}")
    # The parameters survive a second trip unchanged.
    for (name, first), (_, second) in zip(theirs.named_parameters(),
                                          again.to_torch().named_parameters()):
        assert torch.equal(second, first), name
