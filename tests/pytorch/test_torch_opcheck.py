"""``torch.library.opcheck`` on the six ops: schema (no mutation, no aliasing), the autograd
registration, the fake kernels against the real ones (shapes, dtypes, strides), and AOT
dispatch with dynamic shapes.

The forward ops get every optional input, the differentiable ones requiring grad (the mask is a
constant: it must not). The gradient ops have no backward, so their inputs do not require grad;
their saved tensors come from a forward call.
"""

from __future__ import annotations

import pytest
import torch

import rnngraph as rg
import rnngraph.torch  # registers torch.ops.rnngraph.*

CELLS = ("single_gate_rnn", "lstm", "gru")
# A GRU with resetAfter (the only form that reads secondaryBias), an LSTM with peepholes.
OPTIONS = {"single_gate_rnn": {"activation": rg.RNNActivation.tanh}, "lstm": {},
           "gru": {"resetAfter": True}}
# The gradient ops' outputs in SPEC.md section 6 order when every input is given.
RETURNED = {"single_gate_rnn": ("source", "recurrentWeight", "inputWeight", "bias", "initState"),
            "lstm": ("source", "recurrentWeight", "inputWeight", "bias", "peephole",
                     "initState", "initCell"),
            "gru": ("source", "recurrentWeight", "inputWeight", "bias", "initState",
                    "secondaryBias")}
SAVED = {"zState": "zState", "cellOutputFwd": "cellSequence", "outputFwd": "h"}
T, N, H = 3, 2, 2
DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.float64],
                                 ids=["float32", "float64"])
DIRECTIONS = pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])


def _forward_inputs(draw_inputs, cell: str, bidirectional: bool, dtype: torch.dtype,
                    requires_grad: bool) -> dict[str, torch.Tensor]:
    arrays = draw_inputs(cell, _options(cell, bidirectional), T=T, N=N, I=3, H=H,
                         peephole=cell == "lstm", mask="fraction")
    inputs = {label: torch.from_numpy(value).to(dtype) for label, value in arrays.items()}
    for label, tensor in inputs.items():
        tensor.requires_grad_(requires_grad and label != "mask")
    return inputs


def _options(cell: str, bidirectional: bool) -> dict:
    return {**OPTIONS[cell], "bidirectional": bidirectional}


@DTYPES
@DIRECTIONS
@pytest.mark.parametrize("cell", CELLS)
def test_forward_op(cell, bidirectional, dtype, draw_inputs):
    op = getattr(torch.ops.rnngraph, cell).default
    inputs = _forward_inputs(draw_inputs, cell, bidirectional, dtype, requires_grad=True)
    assert set(inputs) == {*RETURNED[cell], "mask"}  # every tensor input given
    results = torch.library.opcheck(op, (), {**inputs, **_options(cell, bidirectional)})
    assert set(results.values()) == {"SUCCESS"}, results
    assert "test_autograd_registration" in results


@DTYPES
@DIRECTIONS
@pytest.mark.parametrize("cell", CELLS)
def test_gradient_op(cell, bidirectional, dtype, draw_inputs):
    torch.manual_seed(0)
    forward = getattr(torch.ops.rnngraph, cell)
    gradient_op = getattr(torch.ops.rnngraph, f"{cell}_gradients").default
    inputs = _forward_inputs(draw_inputs, cell, bidirectional, dtype, requires_grad=False)
    options = _options(cell, bidirectional)
    outputs = forward(**inputs, **options)
    names = (("h", "state", "cell", "cellSequence", "zState") if cell == "lstm"
             else ("h", "state", "zState"))
    produced = dict(zip(names, outputs))
    D = 2 if bidirectional else 1
    arguments = {**inputs,
                 "sourceGradient": torch.randn(T, N, D * H, dtype=dtype),
                 "stateGradient": torch.randn(N, D * H, dtype=dtype)}
    if cell == "lstm":
        arguments["cellGradient"] = torch.randn(N, D * H, dtype=dtype)
    schema_names = {argument.name for argument in gradient_op._schema.arguments}
    arguments.update({label: produced[name] for label, name in SAVED.items()
                      if label in schema_names})
    assert not any(t.requires_grad for t in arguments.values())
    results = torch.library.opcheck(gradient_op, (), {**arguments, **options})
    assert set(results.values()) == {"SUCCESS"}, results
    gradients = gradient_op(**arguments, **options)
    # One gradient per differentiable input, in section 6 order, of its input's shape and dtype.
    assert set(inputs) == {*RETURNED[cell], "mask"}
    assert [g.shape for g in gradients] == [inputs[label].shape for label in RETURNED[cell]]
    assert all(g.dtype == dtype for g in gradients)
