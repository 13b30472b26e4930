"""LSTM and LSTMGradients against torch.nn.LSTM (float64), forward and every gradient.

torch's gate order [i, f, g, o] is rnngraph's default [i, f, z, o]; its two biases are
summed into ``bias`` and states map [D, N, H] <-> [N, D·H] (tests/reference/torch_mapping).
The torch gradients come from autograd of L = Σ out·dy + Σ h_n·dS + Σ c_n·dC.
"""

import numpy as np
import pytest
import torch

import lstm_helpers as lh
import rnngraph as rg
from harness import final
from reference import torch_mapping

TOLERANCE = 1e-11  # float64; only summation order differs from torch (observed ~1e-15)


@pytest.fixture
def rng(request):
    # conftest's rng seeds from hash(nodeid), which is salted per process: use CRC-32.
    return lh.stable_rng(request.node.nodeid)


def torch_lstm(rng, I, H, bidirectional):
    module = torch.nn.LSTM(I, H, bidirectional=bidirectional, dtype=torch.float64)
    with torch.no_grad():
        for parameter in module.parameters():  # our data, distinct b_ih and b_hh
            parameter.copy_(torch.from_numpy(0.5 * rng.standard_normal(parameter.shape)))
    return module


def to_torch_state(state, D):
    """rnngraph [N, D·H] -> torch [D, N, H]."""
    N = state.shape[0]
    return torch.from_numpy(np.ascontiguousarray(state.reshape(N, D, -1).transpose(1, 0, 2)))


SIZES = [pytest.param(dict(T=5, N=3, I=4, H=3), id="T=5-N=3-I=4-H=3"),
         pytest.param(dict(T=1, N=1, I=2, H=5), id="T=1-N=1-I=2-H=5"),
         pytest.param(dict(T=9, N=4, I=6, H=8), id="T=9-N=4-I=6-H=8")]


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_matches_torch_lstm(bidirectional, sizes, rng):
    T, N, I, H = sizes["T"], sizes["N"], sizes["I"], sizes["H"]
    D = 2 if bidirectional else 1
    module = torch_lstm(rng, I, H, bidirectional)
    source = rng.standard_normal((T, N, I))
    h0, c0 = 0.5 * rng.standard_normal((D, N, H)), 0.5 * rng.standard_normal((D, N, H))
    dy = rng.standard_normal((T, N, D * H))
    dS, dC = rng.standard_normal((N, D * H)), rng.standard_normal((N, D * H))

    # torch: forward and autograd.
    xt = torch.from_numpy(source.copy()).requires_grad_()
    h0t = torch.from_numpy(h0.copy()).requires_grad_()
    c0t = torch.from_numpy(c0.copy()).requires_grad_()
    out, (h_n, c_n) = module(xt, (h0t, c0t))
    loss = ((out * torch.from_numpy(dy)).sum() + (h_n * to_torch_state(dS, D)).sum()
            + (c_n * to_torch_state(dC, D)).sum())
    loss.backward()
    want = {"source": xt.grad.numpy(), **torch_mapping.torch_grads_to_rnngraph("lstm", module),
            "initState": torch_mapping.state_from_torch(h0t.grad),
            "initCell": torch_mapping.state_from_torch(c0t.grad)}

    # rnngraph, with the torch parameters mapped to its layout.
    x = {"source": source, **torch_mapping.lstm_params_from_torch(module),
         "initState": torch_mapping.state_from_torch(h0),
         "initCell": torch_mapping.state_from_torch(c0)}
    desc = rg.LSTMDescriptor(bidirectional=bidirectional, produceCell=True)
    got = lh.run_forward(x, desc)
    differences = {
        "h": lh.max_abs_diff(got["h"], out.detach().numpy()),
        "final h": lh.max_abs_diff(final(got["h"], desc, H), torch_mapping.state_from_torch(h_n)),
        "final c": lh.max_abs_diff(final(got["c"], desc, H), torch_mapping.state_from_torch(c_n)),
    }
    grads = lh.run_gradients(x, desc, dy, dS, dC)
    assert set(grads) == set(want)
    for label in grads:
        assert grads[label].shape == want[label].shape, label
        differences[f"d{label}"] = lh.max_abs_diff(grads[label], want[label])
    worst = max(differences, key=differences.get)
    assert differences[worst] < TOLERANCE, (
        f"vs torch.nn.LSTM: {worst} differs by {differences[worst]:.3e}; all max abs "
        f"differences: { {k: f'{v:.1e}' for k, v in differences.items()} }")
