"""LSTM against torch.nn.LSTM (float64): rnngraph's outputs and every gradient, and the NumPy
reference's outputs, against torch's forward and autograd.

torch's gate order [i, f, g, o] is rnngraph's default [i, f, z, o]; its two biases sum to
``bias`` and its states map [D, N, H] <-> [N, D·H] (tests/reference/torch_mapping.py).
"""

from __future__ import annotations

import pytest
import torch

from reference import torch_mapping
from toolkit import (
    Signals,
    assert_all_close,
    assert_close,
    cases,
    final,
    forward,
    gradients,
    reference,
)


@pytest.mark.parametrize("case", cases(
    "LSTM", *(f"{direction}-h0-c0-{sizes}" for direction in ("fwd", "bi")
              for sizes in ("T5-N3-I4-H3", "T1-N1-I2-H5", "T9-N4-I6-H8"))))
def test_matches_torch_lstm(case, rng):
    """L = Σ out·dy + Σ h_n·dS + Σ c_n·dC through torch autograd, rnngraph and (forward) the
    reference."""
    T, N, I, H, D = case.T, case.N, case.I, case.H, case.D
    module = torch.nn.LSTM(I, H, bidirectional=case.bidirectional, dtype=torch.float64)
    with torch.no_grad():
        for param in module.parameters():  # deterministic weights, distinct b_ih and b_hh
            param.copy_(torch.from_numpy(0.5 * rng.standard_normal(tuple(param.shape))))
    source = torch.from_numpy(rng.standard_normal((T, N, I))).requires_grad_(True)
    h0 = torch.from_numpy(0.5 * rng.standard_normal((D, N, H))).requires_grad_(True)
    c0 = torch.from_numpy(0.5 * rng.standard_normal((D, N, H))).requires_grad_(True)
    dy = rng.standard_normal((T, N, D * H))
    dS, dC = rng.standard_normal((D, N, H)), rng.standard_normal((D, N, H))
    out, (h_n, c_n) = module(source, (h0, c0))
    ((out * torch.from_numpy(dy)).sum() + (h_n * torch.from_numpy(dS)).sum()
     + (c_n * torch.from_numpy(dC)).sum()).backward()
    state = torch_mapping.state_from_torch  # [D, N, H] -> [N, D·H]
    torch_final = {"h": state(h_n), "c": state(c_n)}

    x = {"source": source.detach().numpy().copy(), **torch_mapping.lstm_params_from_torch(module),
         "initState": state(h0), "initCell": state(c0)}
    for name, outputs in (("rnngraph", forward(case, x)), ("reference", reference(case, x))):
        assert_close(outputs["h"], out.detach().numpy(), "float64", name)
        # torch's h_n and c_n are each direction's final state and cell (SPEC.md section 4).
        assert_all_close({k: final(outputs[k], case) for k in "hc"}, torch_final, "float64",
                         f"{name} final")

    grads = gradients(case, x, Signals(dy, state(dS), state(dC)))
    expected = torch_mapping.torch_grads_to_rnngraph("lstm", module)
    expected["source"] = source.grad.numpy()
    expected["initState"], expected["initCell"] = state(h0.grad), state(c0.grad)
    assert_all_close(grads, expected, "float64", "gradient vs torch")
