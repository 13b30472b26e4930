"""The modules' eager path (rnngraph.torch._direct): taken for plain CPU tensors, left for
the registered ops whenever a tracing system or a dispatch mode must see the call, and
bit-identical to the ops in outputs and gradients. (A resetAfter GRU's gradients agree to
rounding: the eager path reads the recurrent product its forward kept, which the registered
gradient op, given only the op's outputs, computes again.)"""

from __future__ import annotations

import pytest
import torch
from pytorch.torch_helpers_api import CELLS, build, sample
from torch.utils._python_dispatch import TorchDispatchMode

from rnngraph.torch import _direct


class Recording(TorchDispatchMode):
    """Lets every op through and records their names."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def leaves(module, x, hx):
    states = hx if isinstance(hx, tuple) else (hx,)
    return [x, *states, *module.parameters()]


def step(module, x, hx, mask=None, with_output=True):
    """Outputs, and the gradients of a weighted loss of the final states and (with_output)
    h."""
    for leaf in leaves(module, x, hx):
        leaf.grad = None
    output, state = module(x, hx, mask)
    finals = state if isinstance(state, tuple) else (state,)
    weights = torch.Generator().manual_seed(7)
    loss = sum((t * torch.randn(t.shape, generator=weights, dtype=t.dtype)).sum()
               for t in ((output, *finals) if with_output else finals))
    loss.backward()
    return [output.detach(), *(f.detach() for f in finals)], [
        leaf.grad.clone() for leaf in leaves(module, x, hx)]


# With the final states alone in the loss (the output unused), h's incoming gradient is None,
# and both paths give the kernel zeros.
@pytest.mark.parametrize("loss_of", ["output_and_states", "states_alone"])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("cell", CELLS)
def test_the_eager_path_equals_the_ops_bit_for_bit(cell, bidirectional, loss_of):
    module = build(cell, bidirectional=bidirectional)
    x, hx = sample(module)
    x.requires_grad_(True)
    for t in hx if isinstance(hx, tuple) else (hx,):
        t.requires_grad_(True)
    mask = (torch.rand(5, 3, 1, generator=torch.Generator().manual_seed(3)) > 0.3).double()
    with_output = loss_of == "output_and_states"
    direct = step(module, x, hx, mask, with_output)
    with Recording() as recording:  # a dispatch mode: the call goes through the ops
        through_ops = step(module, x, hx, mask, with_output)
    assert any(name.startswith("rnngraph.") for name in recording.ops), recording.ops
    assert any("_gradients" in name for name in recording.ops), recording.ops
    assert any(g.abs().sum() > 0 for g in direct[1])
    for ours, theirs in zip(direct[0] + direct[1], through_ops[0] + through_ops[1],
                            strict=True):
        assert torch.equal(ours, theirs)


def test_a_reset_after_gru_reads_the_product_its_forward_kept(monkeypatch):
    """The eager path's gradient kernel gets the forward's recurrentProduct (hm·R_oᵀ + b2 of
    every step) instead of computing it; the results match the ops' to float64 rounding."""
    from rnngraph.torch import _ops

    given: list[set[str]] = []
    kernel = _ops.gradient_on_arrays

    def spy(cell, dense, bound):
        given.append(set(dense))
        return kernel(cell, dense, bound)

    monkeypatch.setattr(_ops, "gradient_on_arrays", spy)
    for bidirectional in (False, True):
        module = build("gru", bidirectional=bidirectional, resetAfter=True)
        x, hx = sample(module)
        x.requires_grad_(True)
        hx.requires_grad_(True)
        given.clear()
        direct = step(module, x, hx)
        assert len(given) == 1 and "recurrentProduct" in given[0]
        with Recording():
            through_ops = step(module, x, hx)
        assert "recurrentProduct" not in given[-1]
        for ours, theirs in zip(direct[0], through_ops[0], strict=True):
            assert torch.equal(ours, theirs)
        for ours, theirs in zip(direct[1], through_ops[1], strict=True):
            assert (ours - theirs).abs().max() <= 1e-12 * max(1.0, theirs.abs().max())
    given.clear()
    reset_before = build("gru")
    x, hx = sample(reset_before)
    step(reset_before, x.requires_grad_(True), hx.requires_grad_(True))  # nothing kept
    assert given and "recurrentProduct" not in given[0]


@pytest.mark.parametrize("cell", CELLS)
def test_an_inference_call_takes_a_mask_that_requires_grad_as_the_ops_do(cell):
    # Under no_grad nothing is recorded, so a mask that requires grad is no contradiction:
    # the eager path (no autograd) and the ops agree, in outputs too.
    module = build(cell)
    x, hx = sample(module)
    mask = (torch.rand(5, 3, 1, generator=torch.Generator().manual_seed(3)) > 0.3).double()
    mask.requires_grad_(True)
    with torch.no_grad():
        assert _direct.eager([x, mask, *module.parameters()])
        direct = module(x, hx, mask)
        with Recording() as recording:
            through_ops = module(x, hx, mask)
    assert f"rnngraph.{module._cell.op}.default" in recording.ops
    flat = [direct[0], *(direct[1] if isinstance(direct[1], tuple) else (direct[1],))]
    theirs = [through_ops[0],
              *(through_ops[1] if isinstance(through_ops[1], tuple) else (through_ops[1],))]
    for ours, want in zip(flat, theirs, strict=True):
        assert not ours.requires_grad and ours.grad_fn is None
        assert torch.equal(ours, want)


def test_the_eager_path_is_taken_for_plain_tensors_and_parameters():
    module = build("lstm")
    x, _ = sample(module)
    assert _direct.eager([x, None, *module.parameters()])
    with Recording() as recording:
        assert not _direct.eager([x])
        module(x)
    assert "rnngraph.lstm.default" in recording.ops
    with Recording() as recording:  # the mode ends: eager again, nothing recorded by it
        pass
    assert _direct.eager([x])


def test_meta_and_fake_tensors_go_through_the_ops():
    from torch._subclasses.fake_tensor import FakeTensorMode

    module = build("gru")
    assert not _direct.eager([torch.empty(2, device="meta")])
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        x = mode.from_tensor(torch.randn(5, 3, 3, dtype=torch.float64))
        assert not _direct.eager([x])
        output, h = module(x)
    assert output.shape == (5, 3, 4) and h.shape == (1, 3, 4)


def test_backward_after_an_inference_forward_is_refused():
    module = build("single_gate_rnn")
    x, hx = sample(module)
    with torch.no_grad():
        output, _ = module(x, hx)
    # The output of a no-grad call has no graph; a training forward whose state was not
    # saved (training=False with inputs that need grad) is refused by the backward.
    assert output.grad_fn is None
    for leaf in module.parameters():
        leaf.requires_grad_(True)
    from rnngraph.torch._cells import SINGLE_GATE

    outputs = _direct.call(SINGLE_GATE, {"source": x, "recurrentWeight": module.recurrentWeight,
                                         "inputWeight": module.inputWeight},
                           module._options, training=False)
    with pytest.raises(RuntimeError, match="training=True"):
        outputs[0].sum().backward()


@pytest.mark.parametrize("cell", CELLS)
def test_a_second_backward_through_the_gradients_is_refused(cell):
    """The gradient kernel records no graph: with create_graph=True its gradients may be read,
    but a backward through them (a gradient penalty) raises instead of dropping the term."""
    module = build(cell)
    x, hx = sample(module)
    x.requires_grad_(True)
    output, _ = module(x, hx)
    (dx,) = torch.autograd.grad(output.sum(), x, create_graph=True)
    assert torch.isfinite(dx).all()  # reading them is fine
    with pytest.raises(RuntimeError, match="double backward"):
        ((dx ** 2).sum() + (x ** 2).sum()).backward()
    (plain,) = torch.autograd.grad(module(x, hx)[0].sum(), x)  # create_graph=False: as before
    assert torch.equal(plain, dx.detach())


@pytest.mark.parametrize("cell", list(CELLS))
def test_a_backward_frees_what_the_forward_kept(cell):
    """zState, the cell sequence, the kept product and the arrays the kernel read are saved
    tensors: a backward (without retain_graph) frees them with the inputs, so a graph kept
    alive afterwards (a loss kept in a list) holds no arrays; with retain_graph a second
    backward still finds them."""
    import numpy as np

    module = CELLS[cell].module(8, 16, dtype=torch.float64)
    x = torch.randn(5, 3, 8, dtype=torch.float64, requires_grad=True)
    output, _ = module(x)
    node = output.grad_fn
    assert type(node).__name__ == "_RecurrentBackward"
    held = [name for name, value in vars(node).items()
            if isinstance(value, np.ndarray) or (isinstance(value, dict) and any(
                isinstance(v, np.ndarray) for v in value.values()))]
    assert held == []
    output.sum().backward(retain_graph=True)
    first = x.grad.clone()
    output.sum().backward()  # the saved tensors are still there
    torch.testing.assert_close(x.grad, 2 * first, rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="freed"):
        node.saved_tensors  # noqa: B018 (freed by the last backward)
