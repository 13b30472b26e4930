"""singleGateRNN against torch.nn.RNN (float64): rnngraph's outputs and every gradient, and
the NumPy reference's outputs, against torch's forward and autograd.

torch.nn.RNN is rnngraph's single gate with activation tanh or relu; its two biases sum to
``bias`` and its states map [D, N, H] <-> [N, D·H] (tests/reference/torch_mapping.py).
"""

from __future__ import annotations

import pytest
import torch

from reference import torch_mapping
from toolkit import (
    Case,
    Signals,
    assert_all_close,
    assert_close,
    final,
    forward,
    gradients,
    reference,
)


@pytest.mark.parametrize("direction", ["fwd", "bi"])
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
def test_matches_torch_rnn(nonlinearity, direction, rng):
    """L = Σ out·dy + Σ h_n·dS through torch autograd, rnngraph and (forward) the reference."""
    case = Case("singleGateRNN", direction, {"activation": nonlinearity}, initState="[N,DH]",
                T=5, N=3, I=4, H=6)
    T, N, I, H, D = case.T, case.N, case.I, case.H, case.D
    module = torch.nn.RNN(I, H, nonlinearity=nonlinearity, bidirectional=case.bidirectional,
                          dtype=torch.float64)
    with torch.no_grad():
        for param in module.parameters():  # deterministic weights, from the test's generator
            param.copy_(torch.from_numpy(0.5 * rng.standard_normal(tuple(param.shape))))
    source = torch.from_numpy(rng.standard_normal((T, N, I))).requires_grad_(True)
    h0 = torch.from_numpy(0.7 * rng.standard_normal((D, N, H))).requires_grad_(True)
    dy = rng.standard_normal((T, N, D * H))
    dS = rng.standard_normal((D, N, H))
    out, h_n = module(source, h0)
    ((out * torch.from_numpy(dy)).sum() + (h_n * torch.from_numpy(dS)).sum()).backward()
    torch_h = out.detach().numpy()
    torch_final = torch_mapping.state_from_torch(h_n)

    x = {"source": source.detach().numpy().copy(), **torch_mapping.rnn_params_from_torch(module),
         "initState": torch_mapping.state_from_torch(h0)}
    for name, h in (("rnngraph", forward(case, x)["h"]), ("reference", reference(case, x)["h"])):
        assert_close(h, torch_h, "float64", name)
        # torch's h_n is each direction's final state (SPEC.md section 4).
        assert_close(final(h, case), torch_final, "float64", f"{name} final state")
    if nonlinearity == "relu":
        assert (torch_h == 0).any() and (torch_h > 0).any()

    grads = gradients(case, x, Signals(dy, torch_mapping.state_from_torch(dS)))
    expected = torch_mapping.torch_grads_to_rnngraph("rnn", module)
    expected["source"] = source.grad.numpy()
    expected["initState"] = torch_mapping.state_from_torch(h0.grad)
    assert_all_close(grads, expected, "float64", "gradient vs torch")
