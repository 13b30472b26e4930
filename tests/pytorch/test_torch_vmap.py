"""torch.func.vmap over rnngraph.torch: the modules and raw ops run once per element of the
mapped dimension (outside autograd), giving bit for bit what a loop over it gives; inside
autograd a transform is refused by name, as torch's custom-op autograd does not support
torch.func."""

from __future__ import annotations

import pytest
import torch
from pytorch.torch_helpers_api import CELLS, I, build, raw_inputs

B = 4  # the mapped dimension


def _mapped_inputs(module, seed=5):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(B, 5, 3, I, generator=generator, dtype=torch.float64)
    h0 = torch.randn(B, 2 if module.descriptor.bidirectional else 1, 3, module.hidden_size,
                     generator=generator, dtype=torch.float64)
    return x, h0


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("cell", CELLS)
def test_vmap_of_a_module_under_no_grad_equals_a_loop(cell, bidirectional):
    module = build(cell, bidirectional=bidirectional)
    x, h0 = _mapped_inputs(module)
    hx = (lambda h: (h, torch.tanh(h))) if cell == "lstm" else (lambda h: h)
    with torch.no_grad():
        mapped = torch.func.vmap(lambda a, h: module(a, hx(h))[0])(x, h0)
        looped = torch.stack([module(x[b], hx(h0[b]))[0] for b in range(B)])
    assert torch.equal(mapped, looped)


@pytest.mark.parametrize("cell", CELLS)
def test_vmap_of_the_raw_ops_with_mapped_weights_equals_a_loop(cell):
    """Each element with its own recurrentWeight (in_dims over weights too), forward and
    gradient op."""
    inputs = raw_inputs(cell)
    weights = torch.stack([inputs["recurrentWeight"] * (1 + b / 10) for b in range(B)])
    forward = getattr(torch.ops.rnngraph, cell)
    gradient = getattr(torch.ops.rnngraph, f"{cell}_gradients")
    others = {k: v for k, v in inputs.items() if k != "recurrentWeight"}

    def both(weight):
        outputs = forward(recurrentWeight=weight, **others)
        dy = torch.ones_like(outputs[0])
        saved = {"zState": outputs[-1]}  # outputs: h, the final states, [cell sequence], z
        if cell == "lstm":
            saved["cellOutputFwd"] = outputs[3]
        if cell == "gru":
            saved["outputFwd"] = outputs[0]
        return outputs[0], gradient(sourceGradient=dy, recurrentWeight=weight, **others,
                                    **saved)[1]

    mapped = torch.func.vmap(both)(weights)
    looped = [both(weights[b]) for b in range(B)]
    for position in range(2):
        assert torch.equal(mapped[position], torch.stack([r[position] for r in looped]))


def test_vmap_inside_autograd_is_refused_by_name():
    module = build("lstm")
    x, _ = _mapped_inputs(module)
    with pytest.raises(RuntimeError, match=r"rnngraph\.torch\.LSTM: torch\.func transforms"):
        torch.func.vmap(lambda a: module(a)[0])(x)
    params = {k: v.detach() for k, v in module.named_parameters()}
    with pytest.raises(RuntimeError, match=r"rnngraph\.torch\.LSTM: torch\.func transforms"):
        torch.func.grad(lambda p: torch.func.functional_call(module, p, (x[0],))[0].sum())(params)


def test_vmap_over_an_empty_dimension_is_refused_by_name():
    inputs = raw_inputs("gru")
    empty = inputs["source"].new_empty((0, *inputs["source"].shape))
    others = {k: v for k, v in inputs.items() if k != "source"}
    with pytest.raises(ValueError, match=r"^GRU: vmap over an empty dimension"):
        torch.func.vmap(lambda s: torch.ops.rnngraph.gru(source=s, **others)[0])(empty)
