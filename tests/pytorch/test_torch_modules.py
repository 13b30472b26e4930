"""rnngraph.torch's modules: parameters (names after the Swift labels, SPEC.md section 1
layouts), dtypes, forward's conventions next to torch.nn's (unbatched input, hx, mask), the
descriptor copy, to_torch/from_torch, and gradients reaching every leaf."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys

import pytest
import torch
from pytorch.torch_helpers_api import CELLS, H, I, build, sample
from torch import nn
from torch.nn.utils import parametrizations, prune

import rnngraph.torch as rt
from rnngraph import GRUDescriptor, LSTMDescriptor, RNNActivation

F64 = torch.float64


def states(state):
    """h (and c) of an hx or of a returned state, as a tuple."""
    return tuple(state) if isinstance(state, tuple) else (state,)


def extras(cell, extra):
    """The module options behind ``extra``: the LSTM's peephole, the GRU's resetAfter."""
    return {"lstm": {"peephole": extra}, "gru": {"resetAfter": extra}}.get(cell, {})


def expected_parameters(cell, bidirectional, bias, extra, input_size):
    """{name: shape}, in registration order, from SPEC.md section 1 (written out here)."""
    G, D = CELLS[cell].gates, 2 if bidirectional else 1
    shapes = {} if input_size is None else {"inputWeight": (D * G * H, input_size)}
    shapes["recurrentWeight"] = (2, G * H, H) if D == 2 else (G * H, H)
    if bias:
        shapes["bias"] = (D * G * H,)
    if cell == "lstm" and extra:
        shapes["peephole"] = (2, 4 * H) if D == 2 else (4 * H,)
    if cell == "gru" and extra and bias:  # secondaryBias iff resetAfter and bias
        shapes["secondaryBias"] = (D * H,)
    return shapes


CONFIGS = [(cell, bidirectional, bias, extra, input_size)
           for cell in CELLS
           for bidirectional, bias, extra, input_size in itertools.product(
               (False, True), (True, False), (False, True) if cell != "single_gate_rnn"
               else (False,), (I, None))]


@pytest.mark.parametrize(("cell", "bidirectional", "bias", "extra", "input_size"), CONFIGS)
def test_parameters_state_dict_and_shapes(cell, bidirectional, bias, extra, input_size):
    module = build(cell, input_size, bias=bias, bidirectional=bidirectional,
                   **extras(cell, extra))
    expected = expected_parameters(cell, bidirectional, bias, extra, input_size)
    assert {name: tuple(p.shape) for name, p in module.named_parameters()} == expected
    assert list(module.state_dict()) == list(expected)
    D = 2 if bidirectional else 1
    x, hx = sample(module, T=5, N=2)  # without inputWeight: x is [T, N, D·G·H]
    assert x.shape[2] == (I if input_size else D * CELLS[cell].gates * H)
    output, state = module(x, hx)
    assert output.shape == (5, 2, D * H)
    assert [s.shape for s in states(state)] == [(D, 2, H)] * len(states(hx))


@pytest.mark.parametrize(("arguments", "error", "problem"), [
    ({"batch_first": True}, ValueError, "batch_first: rnngraph's cells are time-major"),
    ({"device": "meta"}, ValueError, "device: rnngraph computes on the CPU"),
    ({"dtype": torch.float16}, TypeError, "dtype: expected torch.float32 or torch.float64"),
    ({"hidden_size": 0}, ValueError, "hidden_size: expected a positive int"),
    ({"input_size": True}, ValueError, "input_size: expected a positive int"),
    ({"descriptor": GRUDescriptor()}, TypeError, "descriptor: expected rnngraph.LSTMDescriptor"),
], ids=["batch_first", "device", "dtype", "hidden_size", "input_size", "descriptor"])
def test_constructor_refusals(arguments, error, problem):
    arguments = {"input_size": I, "hidden_size": H} | arguments
    with pytest.raises(error, match=re.escape(problem)):
        rt.LSTM(**arguments)
    assert rt.LSTM(I, H, device="cpu", batch_first=False).recurrentWeight.device.type == "cpu"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("cell", CELLS)
def test_dtype(cell, dtype):
    module = CELLS[cell].module(I, H, dtype=dtype)
    assert {p.dtype for p in module.parameters()} == {dtype}
    output, state = module(torch.randn(4, 2, I, dtype=dtype))
    assert {t.dtype for t in (output, *states(state))} == {dtype}


def _weight_norm(module):
    return parametrizations.weight_norm(module, "inputWeight")


def _orthogonal(module):
    return parametrizations.orthogonal(module, "recurrentWeight")


def _pruned(module):
    return prune.l1_unstructured(module, "recurrentWeight", 0.5)


@pytest.mark.parametrize("change", [_weight_norm, _orthogonal, _pruned],
                         ids=["weight_norm", "orthogonal", "prune"])
@pytest.mark.parametrize("cell", CELLS)
def test_parametrized_and_pruned_weights_are_what_the_op_reads(cell, change):
    """A parametrization or pruning replaces a parameter by a tensor computed from others:
    the op reads that tensor (as torch.nn's layers do), and the gradients reach the
    parameters it is computed from."""
    torch.manual_seed(0)
    module, twin = (CELLS[cell].module(I, H, dtype=torch.float64) for _ in range(2))
    change(module)
    with torch.no_grad():
        for name, _ in twin.named_parameters():
            getattr(twin, name).copy_(getattr(module, name))
    x = torch.randn(4, 2, I, dtype=torch.float64)
    output, _ = module(x)
    torch.testing.assert_close(output, twin(x)[0], rtol=0, atol=0)
    output.square().sum().backward()
    assert all(p.grad is not None for p in module.parameters())


def test_the_device_argument_places_the_parameters():
    """device="cpu" even where torch's default device is another (here "meta")."""
    with torch.device("meta"):
        module = rt.LSTM(I, H, device="cpu")
    assert {p.device.type for p in module.parameters()} == {"cpu"}


@pytest.mark.parametrize("default", [torch.float64, torch.float32])
def test_default_dtype_follows_torch(default):
    previous = torch.get_default_dtype()
    torch.set_default_dtype(default)
    try:
        modules = [kind.module(I, H) for kind in CELLS.values()]
    finally:
        torch.set_default_dtype(previous)
    assert {p.dtype for m in modules for p in m.parameters()} == {default}


def test_import_rnngraph_alone_does_not_import_torch():
    code = ("import sys, rnngraph; rnngraph.Graph(); rnngraph.LSTMDescriptor(); "
            "print('torch' in sys.modules); import rnngraph.torch; print('torch' in sys.modules)")
    run = subprocess.run([sys.executable, "-W", "error", "-c", code], check=False,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", CELLS)
def test_shapes_match_torch_nn(cell, bidirectional, batched):
    ours = build(cell, bidirectional=bidirectional)
    theirs = CELLS[cell].torch_module(I, H, bidirectional=bidirectional, dtype=F64)
    x, hx = sample(ours, T=6, N=3)
    if not batched:
        x = x[:, 0]
        hx = tuple(h[:, 0] for h in hx) if isinstance(hx, tuple) else hx[:, 0]
    for state in (hx, None):
        got, expected = ours(x, state), theirs(x, state)
        assert got[0].shape == expected[0].shape
        assert [s.shape for s in states(got[1])] == [s.shape for s in states(expected[1])]


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", CELLS)
def test_unbatched_input_gives_the_numbers_of_a_batch_of_one(cell, bidirectional):
    module = build(cell, bidirectional=bidirectional)
    x, hx = sample(module, N=1)
    output, state = module(x, hx)
    unbatched_hx = tuple(h[:, 0] for h in states(hx))
    got, got_state = module(x[:, 0], unbatched_hx if len(unbatched_hx) == 2 else unbatched_hx[0])
    assert torch.equal(got, output[:, 0])
    for unbatched, batched in zip(states(got_state), states(state), strict=True):
        assert torch.equal(unbatched, batched[:, 0])


def test_unbatched_input_takes_an_unbatched_mask():
    """An unbatched input drops N; its mask [T, H] should drop N as well (as a [T, 1, H] mask
    of the batch of one). The module instead checks it against [T, N=1, H] and refuses."""
    module = build("lstm")
    x, _ = sample(module, T=5, N=1)
    mask = (torch.arange(5) % 2).to(F64)[:, None, None].expand(5, 1, H)
    batched = module(x, mask=mask)[0][:, 0]
    assert torch.equal(module(x[:, 0], mask=mask[:, 0])[0], batched)


@pytest.mark.parametrize("cell", CELLS)
def test_bool_mask_equals_float_mask(cell):
    module = build(cell, bidirectional=True)
    x, hx = sample(module, T=5, N=3)
    keep = torch.arange(5 * 3 * 2 * H).reshape(5, 3, 2 * H) % 3 != 0
    as_bool, as_float = module(x, hx, mask=keep), module(x, hx, mask=keep.to(F64))
    for a, b in zip([as_bool[0], *states(as_bool[1])], [as_float[0], *states(as_float[1])],
                    strict=True):
        assert torch.equal(a, b)
    assert not torch.equal(as_bool[0], module(x, hx)[0])  # the mask is not ignored


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", CELLS)
def test_hx_none_equals_zeros(cell, bidirectional):
    module = build(cell, bidirectional=bidirectional)
    x, hx = sample(module)
    zeros = tuple(torch.zeros_like(h) for h in states(hx))
    default, given = module(x), module(x, zeros if len(zeros) == 2 else zeros[0])
    assert torch.equal(default[0], given[0])
    for a, b in zip(states(default[1]), states(given[1]), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize(("descriptor", "mutations"), [
    (GRUDescriptor(resetAfter=True), {"resetAfter": False, "flipZ": True, "bidirectional": True}),
    (LSTMDescriptor(), {"forgetGateLast": True, "activation": RNNActivation.relu}),
], ids=["gru", "lstm"])
def test_descriptor_is_copied(descriptor, mutations):
    kind = CELLS["gru" if isinstance(descriptor, GRUDescriptor) else "lstm"]
    module = kind.module(I, H, descriptor=descriptor, dtype=F64)
    kept, names = descriptor.copy(), [name for name, _ in module.named_parameters()]
    x, hx = sample(module)
    before = module(x, hx)[0]
    for name, value in mutations.items():
        setattr(descriptor, name, value)
        setattr(module.descriptor, name, value)  # the property hands out a copy too
    assert module.descriptor == kept
    assert [name for name, _ in module.named_parameters()] == names
    assert torch.equal(module(x, hx)[0], before)


@pytest.mark.parametrize(("cell", "options", "problem"), [
    ("lstm", {"activation": RNNActivation.relu}, "activation=relu"),
    ("lstm", {"forgetGateActivation": RNNActivation.hardSigmoid}, "forgetGateActivation"),
    ("gru", {"resetAfter": True, "outputGateActivation": RNNActivation.relu},
     "outputGateActivation=relu"),
    ("single_gate_rnn", {"activation": RNNActivation.sigmoid}, "activation=sigmoid"),
    ("lstm", {"peephole": True}, "peephole"),
    ("gru", {}, "resetAfter=False"),
    ("gru", {"resetAfter": True, "flipZ": True}, "flipZ=True"),
    ("lstm", {"reverse": True}, "reverse=True without bidirectional"),
    ("gru", {"resetAfter": True, "input_size": None}, "no inputWeight"),
])
def test_to_torch_refuses_what_torch_nn_cannot_express(cell, options, problem):
    module = build(cell, **options)
    with pytest.raises(ValueError, match=r"to_torch: no torch\.nn twin: .*" + re.escape(problem)):
        module.to_torch()


@pytest.mark.parametrize(("cell", "bias", "options"), [
    ("lstm", True, {}),
    ("lstm", True, {"forgetGateLast": True}),
    ("lstm", False, {"forgetGateLast": True, "bidirectional": True}),
    ("gru", True, {"resetAfter": True}),  # rnngraph's [z, r, o] to torch's [r, z, n]
    ("gru", True, {"resetAfter": True, "resetGateFirst": True, "bidirectional": True}),
    ("gru", False, {"resetAfter": True, "bidirectional": True}),
    ("single_gate_rnn", True, {}),
    ("single_gate_rnn", True, {"activation": RNNActivation.tanh, "bidirectional": True}),
], ids=str)
def test_to_torch_reorders_gates_and_keeps_the_numbers(cell, bias, options):
    ours = build(cell, bias=bias, **options)
    theirs = ours.to_torch()
    assert type(theirs) is CELLS[cell].torch_module
    x, hx = sample(ours)
    got, expected = ours(x, hx), theirs(x, hx)
    torch.testing.assert_close(got[0], expected[0], rtol=1e-12, atol=1e-12)
    for a, b in zip(states(got[1]), states(expected[1]), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_to_torch_keeps_a_secondary_bias_without_a_bias(bidirectional):
    """A resetAfter GRU whose bias was set to None keeps its secondaryBias (torch's b_hn):
    the torch twin then has zero b_ih and b_hh = [0, 0, secondaryBias]."""
    ours = build("gru", bias=True, resetAfter=True, bidirectional=bidirectional)
    ours.bias = None
    with torch.no_grad():
        ours.secondaryBias.copy_(torch.linspace(-1, 1, ours.secondaryBias.numel()))
    theirs = ours.to_torch()
    assert theirs.bias
    x, hx = sample(ours)
    got, expected = ours(x, hx), theirs(x, hx)
    torch.testing.assert_close(got[0], expected[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got[1], expected[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("cell", "make", "error", "problem"), [
    ("lstm", lambda: nn.LSTM(I, H, num_layers=2), ValueError, "num_layers=2"),
    ("lstm", lambda: nn.LSTM(I, H, proj_size=2), ValueError, "proj_size=2"),
    ("gru", lambda: nn.GRU(I, H, batch_first=True), ValueError, "batch_first=True"),
    ("single_gate_rnn", lambda: nn.RNN(I, H, num_layers=2, dropout=0.5), ValueError,
     "dropout=0.5"),
    ("lstm", lambda: nn.GRU(I, H), TypeError, "expected a torch.nn.LSTM, got GRU"),
    ("gru", lambda: nn.RNN(I, H), TypeError, "expected a torch.nn.GRU, got RNN"),
    ("single_gate_rnn", lambda: nn.Linear(I, H), TypeError, "expected a torch.nn.RNN, got Linear"),
], ids=["layers", "proj", "batch_first", "dropout", "lstm-gru", "gru-rnn", "linear"])
def test_from_torch_refusals(cell, make, error, problem):
    with pytest.raises(error, match=r"from_torch: .*" + re.escape(problem)):
        CELLS[cell].module.from_torch(make())


@pytest.mark.parametrize("bidirectional", [False, True])
def test_from_torch_rnn_with_relu(bidirectional):
    theirs = nn.RNN(I, H, nonlinearity="relu", bidirectional=bidirectional, dtype=F64)
    with torch.no_grad():
        for parameter in theirs.parameters():  # seeded, and biases that matter
            parameter.copy_(torch.linspace(-0.7, 0.8, parameter.numel()).view_as(parameter))
    ours = rt.SingleGateRNN.from_torch(theirs)
    assert ours.descriptor.activation == RNNActivation.relu
    assert ours.descriptor.bidirectional == bidirectional
    x, hx = sample(ours)
    got, expected = ours(x, hx), theirs(x, hx)
    assert got[0].gt(0).any() and got[0].eq(0).any()  # relu, not tanh
    torch.testing.assert_close(got[0], expected[0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got[1], expected[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("input_size", [I, None], ids=["I", "projected"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", CELLS)
def test_gradients_reach_every_parameter_the_input_and_the_states(cell, bidirectional,
                                                                    input_size):
    module = build(cell, input_size, bidirectional=bidirectional, **extras(cell, True))
    x, hx = sample(module)
    leaves = {"input": x.requires_grad_(), "h0": states(hx)[0].requires_grad_()}
    if cell == "lstm":
        leaves["c0"] = hx[1].requires_grad_()
    output, state = module(x, hx)
    weights = torch.randn(output.shape, generator=torch.Generator().manual_seed(2), dtype=F64)
    loss = (output * weights).sum() + sum(s.square().sum() for s in states(state))
    loss.backward()
    leaves.update(module.named_parameters())
    assert {"peephole", "secondaryBias"} & set(leaves) or cell == "single_gate_rnn"
    for name, leaf in leaves.items():
        assert leaf.grad is not None, name
        assert leaf.grad.shape == leaf.shape, name
        assert leaf.grad.abs().sum() > 0, name
