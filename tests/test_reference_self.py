"""Self-tests of the NumPy test oracle in ``tests/reference`` (SPEC.md sections 1-5).

The oracle is checked against PyTorch (torch.nn.LSTM and GRU, uni- and bidirectional,
float64; torch.nn.RNN is in test_single_gate_rnn_peers.py), its torch parameter mapping
against finite differences, its structure (time order of ``reverse``, bidirectional halves,
masks, projected sources, pre-activations) for every cell, and small hand-computed cases
(test_reference_by_hand.py) that pin the SPEC.md choices PyTorch cannot check.
"""

import numpy as np
import pytest
import torch

from reference import (
    gru_params_from_torch,
    lstm_params_from_torch,
    rnn_params_from_torch,
    state_from_torch,
    torch_grads_to_rnngraph,
)
from reference.numpy_rnn import activation
from toolkit import (
    SLOTS,
    Case,
    assert_all_close,
    assert_close,
    assert_gradients_close,
    final,
    make_inputs,
    numerical_gradients,
    one_direction,
    reference,
    spec,
)

#: Cell configurations of the structural tests.
CONFIGS = [
    Case("singleGateRNN"),
    Case("singleGateRNN", activations={"activation": "tanh"}),
    Case("LSTM"),
    Case("LSTM", forgetGateLast=True, activations={"activation": "hardSigmoid"}),
    Case("GRU"),
    Case("GRU", resetAfter=True),
    Case("GRU", resetAfter=True, resetGateFirst=True, flipZ=True),
]
CONFIG_IDS = [f"{c.cell}-{c.id}" for c in CONFIGS]


def every_input(config, direction="fwd", projected=False):
    """``config`` with every optional input (0/1 mask), T, N, I, H = 5, 3, 4, 6."""
    return config.with_all_inputs(direction=direction, inputWeight=not projected, T=5, N=3,
                                  I=4, H=6)


# ---------------------------------------------------------------------------
# Agreement with PyTorch
# ---------------------------------------------------------------------------

def torch_setup(module_cls, case, rng, **kwargs):
    """A float64 torch module (torch's own initialisation, seeded from ``rng``), x and states
    in torch layout."""
    torch.manual_seed(int(rng.integers(2**31)))
    module = module_cls(case.I, case.H, bidirectional=case.bidirectional, dtype=torch.float64,
                        **kwargs)
    x = torch.from_numpy(rng.standard_normal((case.T, case.N, case.I)))
    h0, c0 = (torch.from_numpy(rng.standard_normal((case.D, case.N, case.H))) for _ in "hc")
    return module, x, h0, c0


@pytest.mark.parametrize("direction", ["fwd", "bi"])
def test_lstm_matches_torch(direction, rng):
    case = Case("LSTM", direction, initState="[N,DH]", initCell="[N,DH]", T=5, N=3, I=4, H=6)
    module, x, h0, c0 = torch_setup(torch.nn.LSTM, case, rng)
    with torch.no_grad():
        out, (h_n, c_n) = module(x, (h0, c0))
    ref = reference(case, {"source": x.numpy(), **lstm_params_from_torch(module),
                           "initState": state_from_torch(h0), "initCell": state_from_torch(c0)})
    assert ref["zState"].shape == (case.T, case.N, case.D * 4 * case.H)
    assert_close(ref["h"], out.numpy(), "float64", "h")
    assert_close(final(ref["h"], case), state_from_torch(h_n), "float64", "h_n")
    assert_close(final(ref["c"], case), state_from_torch(c_n), "float64", "c_n")


@pytest.mark.parametrize("direction", ["fwd", "bi"])
def test_gru_matches_torch(direction, rng):
    case = Case("GRU", direction, resetGateFirst=True, resetAfter=True, initState="[N,DH]",
                secondaryBias=True, T=5, N=3, I=4, H=6)
    module, x, h0, _ = torch_setup(torch.nn.GRU, case, rng)
    with torch.no_grad():
        out, h_n = module(x, h0)
    ref = reference(case, {"source": x.numpy(), **gru_params_from_torch(module),
                           "initState": state_from_torch(h0)})
    assert ref["zState"].shape == (case.T, case.N, case.D * 3 * case.H)
    assert_close(ref["h"], out.numpy(), "float64", "h")
    assert_close(final(ref["h"], case), state_from_torch(h_n), "float64", "h_n")


TORCH_MODULES = {"rnn": (torch.nn.RNN, rnn_params_from_torch),
                 "lstm": (torch.nn.LSTM, lstm_params_from_torch),
                 "gru": (torch.nn.GRU, gru_params_from_torch)}
TORCH_AS_CASE = {"rnn": Case("singleGateRNN", activations={"activation": "tanh"}),
                 "lstm": Case("LSTM", initCell="[N,DH]"),
                 "gru": Case("GRU", resetGateFirst=True, resetAfter=True, secondaryBias=True)}


@pytest.mark.parametrize("direction", ["fwd", "bi"])
@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
def test_torch_grads_mapping_matches_finite_differences(cell, direction, rng):
    """``torch_grads_to_rnngraph`` gives d(loss)/d(rnngraph parameter)."""
    case = TORCH_AS_CASE[cell].but(direction=direction, initState="[N,DH]", T=5, N=3, I=4,
                                   H=6)
    module_cls, params_from_torch = TORCH_MODULES[cell]
    module, x, h0, c0 = torch_setup(module_cls, case, rng)
    upstream = rng.standard_normal((case.T, case.N, case.DH))
    out = module(x, (h0, c0) if cell == "lstm" else h0)[0]
    (out * torch.from_numpy(upstream)).sum().backward()
    grads = torch_grads_to_rnngraph(cell, module)

    params = params_from_torch(module)
    states = {"initState": state_from_torch(h0)}
    if cell == "lstm":
        states["initCell"] = state_from_torch(c0)

    def loss(arrays):
        return np.sum(reference(case, {"source": x.numpy(), **states, **arrays})["h"] * upstream)

    assert set(grads) == set(params)
    for name, value in params.items():
        assert grads[name].shape == value.shape, name
    assert_gradients_close(grads, numerical_gradients(loss, params),
                           f"torch mapping {cell} {direction}")


# ---------------------------------------------------------------------------
# Structure, for every cell (SPEC sections 1, 4, 5)
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_reverse_is_forward_on_flipped_time(config, rng):
    """SPEC 4: reverse processes T-1..0 and stores x[t]'s state at out[t]."""
    case = every_input(config, "reverse")
    x = make_inputs(case, rng)
    backward = reference(case, x)
    flipped = dict(x, source=x["source"][::-1], mask=x["mask"][::-1])
    assert_all_close(backward, {k: v[::-1] for k, v in reference(config, flipped).items()},
                     "float64")
    # out[T-1] is the first reverse step: it sees only x[T-1] and initState.
    only_last = reference(case, dict(x, source=x["source"][-1:], mask=x["mask"][-1:]))
    assert_close(backward["h"][-1], only_last["h"][0], "float64")


@pytest.mark.parametrize("projected", [False, True], ids=["W", "noW"])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_bidirectional_is_two_unidirectional_runs(config, projected, rng):
    """SPEC 1/3: forward block first; ``reverse`` ignored when bidirectional."""
    case = every_input(config, "bi", projected)
    x = make_inputs(case, rng)
    both = reference(case, x)
    assert_all_close(reference(case.but(direction="reverse+bi"), x), both, "identical")
    halves = [reference(*one_direction(case, x, d)) for d in (0, 1)]
    assert_all_close(both, {k: np.concatenate([h[k] for h in halves], -1) for k in both},
                     "float64")


@pytest.mark.parametrize("direction", ["fwd", "bi"])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_projected_source_equals_input_weight(config, direction, rng):
    """SPEC 5: without W, source is x' minus the bias (bias still added)."""
    case = every_input(config, direction)
    x = make_inputs(case, rng)
    projected = {k: v for k, v in x.items() if k != "inputWeight"}
    projected["source"] = x["source"] @ x["inputWeight"].T
    assert_all_close(reference(case.but(inputWeight=False), projected), reference(case, x),
                     "float64")


@pytest.mark.parametrize("direction", ["fwd", "bi"])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_zero_mask_removes_only_recurrent_term(config, direction, rng):
    """SPEC 5: the mask only enters ``hm·Rᵀ``, so mask 0 == R 0; a mask of ones == none."""
    case = every_input(config, direction)
    x = make_inputs(case, rng)
    unmasked = {k: v for k, v in x.items() if k != "mask"}
    no_recurrence = dict(unmasked, recurrentWeight=0 * x["recurrentWeight"])
    assert_all_close(reference(case, dict(x, mask=np.zeros((case.T, case.N, 1)))),
                     reference(case, no_recurrence), "float64", "mask 0")
    assert_all_close(reference(case, dict(x, mask=np.ones(()))), reference(case, unmasked),
                     "float64", "mask 1")


@pytest.mark.parametrize("direction", ["fwd", "bi"])
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_preactivations_give_the_outputs(config, direction, rng):
    """``return_preactivations``: every slot's values, activated, are its zState block (the
    single gate's zState is its pre-activation); the LSTM's ``activation`` slot is c."""
    case = every_input(config, direction)
    x = make_inputs(case, rng)
    out, pre = reference(case, x, return_preactivations=True)
    assert set(pre) == set(SLOTS[case.cell])
    assert all(value.shape == (case.T, case.N, case.DH) for value in pre.values())
    slot_of_gate = {token: slot for slot, token in spec.SLOT_TOKENS[case.cell].items()}
    if case.cell == "singleGateRNN":
        assert_close(pre["activation"], out["zState"], "identical")
        assert_close(out["h"], activation(case.activation("activation"), pre["activation"]),
                     "identical")
        return
    H, G = case.H, case.G
    for d in range(case.D):
        for k, gate in enumerate(case.gates):
            slot = slot_of_gate[gate]
            block = out["zState"][..., (d * G + k) * H:(d * G + k + 1) * H]
            assert_close(activation(case.activation(slot), pre[slot][..., d * H:(d + 1) * H]),
                         block, "identical", f"direction {d} gate {gate}")
    if case.cell == "LSTM":
        assert_close(pre["activation"], out["c"], "identical")
