"""Tensors cross between torch and rnngraph's compiled core without copies: the core reads
contiguous inputs in the tensors' own memory, and the op's outputs (forward and gradients)
are tensors over the arrays the core returned. Seen by wrapping the core's entry points that
rnngraph/torch/_ops.py calls, recording each array's address."""

from __future__ import annotations

import pytest
import torch
from pytorch.torch_helpers_api import CELLS, build, sample

from rnngraph.torch import _ops

# The gradient op's results, in order (SPEC.md section 6), one per given input.
RETURNED = ["source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
            "initCell", "secondaryBias"]
EXTRAS = {"single_gate_rnn": {}, "lstm": {"peephole": True}, "gru": {"resetAfter": True}}


def _address(array):
    return None if array is None else array.ctypes.data


@pytest.fixture
def core_calls(monkeypatch):
    """[(entry point, {label: input address}, outputs' addresses)] of each call into the core:
    forward's (h, c, zState, h_n, c_n) as a list, gradients' {label: address}."""
    calls = []
    core = _ops._core
    forward, gradients = core.rnn_forward, core.rnn_gradients

    def addresses(arrays):
        return {label: _address(array) for label, array in arrays.items() if array is not None}

    def recording_forward(options, inputs, **keywords):
        result = forward(options, inputs, **keywords)
        calls.append(("forward", addresses(inputs), [_address(a) for a in result]))
        return result

    def recording_gradients(options, inputs):
        result = gradients(options, inputs)
        calls.append(("gradients", addresses(inputs), addresses(result)))
        return result

    monkeypatch.setattr(core, "rnn_forward", recording_forward)
    monkeypatch.setattr(core, "rnn_gradients", recording_gradients)
    return calls


def op_inputs(cell, bidirectional, dtype):
    """The raw op's inputs: a module's parameters, a source and a [N, D·H] initState."""
    module = build(cell, bidirectional=bidirectional, dtype=dtype, **EXTRAS[cell])
    x, hx = sample(module, T=4, N=3)
    first = hx[0] if isinstance(hx, tuple) else hx
    state = first.transpose(0, 1).reshape(3, -1).contiguous()
    inputs = {"source": x, "initState": state, **dict(module.named_parameters())}
    return inputs | ({"initCell": state + 1} if cell == "lstm" else {}), module


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", CELLS)
def test_the_forward_op_reads_and_returns_memory_in_place(core_calls, cell, bidirectional, dtype):
    inputs, module = op_inputs(cell, bidirectional, dtype)
    outputs = getattr(torch.ops.rnngraph, cell)(**inputs, **module._options, training=True)
    [(entry, read, (h, c, z, h_n, c_n))] = core_calls
    assert entry == "forward"
    assert read == {label: tensor.data_ptr() for label, tensor in inputs.items()}
    named = dict(zip(module._cell.outputs, outputs, strict=True))
    assert named["h"].data_ptr() == h
    assert named["zState"].data_ptr() == z
    if cell == "lstm":
        assert named["cellSequence"].data_ptr() == c
    if not bidirectional:  # the core's final states [1, N, H], viewed as the op's [N, H]
        assert named["state"].data_ptr() == h_n
        assert cell != "lstm" or named["cell"].data_ptr() == c_n


@pytest.mark.parametrize("cell", CELLS)
def test_the_gradient_op_returns_the_cores_arrays(core_calls, cell):
    inputs, module = op_inputs(cell, True, torch.float64)
    outputs = getattr(torch.ops.rnngraph, cell)(**inputs, **module._options, training=True)
    named = dict(zip(module._cell.outputs, outputs, strict=True))
    saved = {"zState": named["zState"], "outputFwd": named["h"],
             "cellOutputFwd": named.get("cellSequence")}
    gradient = torch.ones_like(named["h"])
    given = inputs | {"sourceGradient": gradient, "stateGradient": named["state"]}
    given |= {label: saved[label] for label in module._cell.saved_outputs}
    results = getattr(torch.ops.rnngraph, f"{cell}_gradients")(**given, **module._options)
    [_, (entry, read, returned)] = core_calls
    assert entry == "gradients"
    assert read == {label: tensor.data_ptr() for label, tensor in given.items()}
    assert [t.data_ptr() for t in results] == [returned[label] for label in RETURNED
                                               if label in inputs]


@pytest.mark.parametrize("cell", CELLS)
def test_a_module_forward_and_backward_copy_nothing(core_calls, cell):
    module = build(cell, bidirectional=True, **EXTRAS[cell])
    x, _ = sample(module)
    x.requires_grad_()
    output, state = module(x)
    (output.sum() + (state[0] if cell == "lstm" else state).sum()).backward()
    [(_, read, (h, c, z, h_n, _, product)), (_, read_back, returned)] = core_calls
    parameters = dict(module.named_parameters())
    assert read == {"source": x.data_ptr()} | {n: p.data_ptr() for n, p in parameters.items()}
    assert output.data_ptr() == h
    assert (state[0] if cell == "lstm" else state).data_ptr() == h_n  # [D, N, H] as written
    forward_outputs = {"zState": z, "outputFwd": h, "cellOutputFwd": c}
    for label in module._cell.saved_outputs:  # saved for backward as they were
        assert read_back[label] == forward_outputs[label], label
    # a resetAfter GRU's kept recurrent product too; the other cells keep none
    assert (product is not None) == (cell == "gru")
    assert read_back.get("recurrentProduct") == product
    assert returned["source"] == x.grad.data_ptr()
    for name, parameter in parameters.items():
        assert returned[name] == parameter.grad.data_ptr(), name


@pytest.mark.parametrize("cell", CELLS)
def test_a_non_contiguous_input_is_copied_with_the_same_result(core_calls, cell):
    module = build(cell)
    x, hx = sample(module, T=6, N=4)
    view = x.transpose(0, 1).contiguous().transpose(0, 1)
    assert not view.is_contiguous()
    got, expected = module(view, hx)[0], module(x, hx)[0]
    assert core_calls[0][1]["source"] != view.data_ptr()
    assert core_calls[1][1]["source"] == x.data_ptr()
    assert torch.equal(got, expected)


def test_a_contiguous_slice_is_read_in_place(core_calls):
    module = build("lstm")
    x, _ = sample(module, T=6, N=4)
    window = x[2:]  # contiguous, at an offset in x's storage
    output = module(window)[0]
    assert core_calls[0][1]["source"] == window.data_ptr() != x.data_ptr()
    torch.testing.assert_close(output, module(window.clone())[0], rtol=0, atol=0)
