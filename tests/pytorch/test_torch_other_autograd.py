"""The parts of torch's autograd beyond backward(): torch.jit.trace, saved-tensor hooks and
forward-mode AD. Each either works as it does with torch.nn or is refused by name, never
giving a silently wrong result (a traced constant, stale gradients, zero tangents)."""

from __future__ import annotations

import warnings

import pytest
import torch
from pytorch.torch_helpers_api import CELLS, build, raw_inputs, sample
from torch.autograd import forward_ad

with warnings.catch_warnings():  # torch.func.jvp's first call imports these, which script
    warnings.simplefilter("ignore", DeprecationWarning)  # functions (torch.jit: deprecated)
    import torch._decomp.decompositions_for_jvp


def _output(module, x, hx):
    out, _ = module(x, hx)
    return out


@pytest.mark.parametrize("cell", list(CELLS))
def test_a_module_traced_without_grad_follows_its_input(cell):
    """torch.jit.trace records the op, not the eager kernel's result as a constant."""
    module = build(cell)
    x1, _ = sample(module, seed=1)
    x2, _ = sample(module, seed=2)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit is deprecated; tracer warnings
        traced = torch.jit.trace(module, (x1,), check_trace=False)
        expected = _output(module, x2, None)
        assert not torch.equal(expected, _output(module, x1, None))
        torch.testing.assert_close(traced(x2)[0], expected, rtol=0, atol=0)


@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no_grad"])
@pytest.mark.parametrize("cell", list(CELLS))
def test_a_traced_module_passes_the_trace_check_and_trains(cell, grad):
    """torch.jit.trace's default check traces again under no_grad: both traces must be one
    graph. Traced in either grad mode, the module gives torch.nn's gradients afterwards."""
    module = build(cell)
    x1, _ = sample(module, seed=1)
    x2, _ = sample(module, seed=2)
    with torch.set_grad_enabled(grad), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit is deprecated; tracer warnings
        traced = torch.jit.trace(module, (x1,))  # check_trace=True: raises if graphs differ
    traced(x2)[0].pow(2).sum().backward()
    from_trace = [p.grad.clone() for p in module.parameters()]
    module.zero_grad()
    _output(module, x2, None).pow(2).sum().backward()
    for got, expected in zip(from_trace, [p.grad for p in module.parameters()], strict=True):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


def _parameter_gradients(module, x0, hx, *, edit: bool, hooks: bool) -> list[torch.Tensor]:
    module.zero_grad()
    x = x0.clone().requires_grad_()
    keep_copy = (lambda t: t.clone(), lambda t: t)  # e.g. activations offloaded elsewhere
    if hooks:
        with torch.autograd.graph.saved_tensors_hooks(*keep_copy):
            out = _output(module, x, hx)
    else:
        out = _output(module, x, hx)
    if edit:
        with torch.no_grad():
            x.mul_(3)
    out.pow(2).sum().backward()
    return [p.grad.clone() for p in module.parameters()] + [x.grad.clone()]


@pytest.mark.parametrize("cell", list(CELLS))
def test_saved_tensor_hooks_give_the_backward_the_tensors_they_kept(cell):
    """A pack hook that keeps a copy turns off torch's version check: an in-place edit of
    the input after the forward must then not reach the gradients (as with torch.nn)."""
    options = {"resetAfter": True} if cell == "gru" else {}
    module = build(cell, bidirectional=True, **options)
    x0, hx = sample(module)
    plain = _parameter_gradients(module, x0, hx, edit=False, hooks=False)
    for edit in (False, True):
        hooked = _parameter_gradients(module, x0, hx, edit=edit, hooks=True)
        for a, b in zip(plain, hooked):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


@pytest.mark.parametrize("cell", list(CELLS))
def test_saved_tensor_hooks_see_what_only_the_backward_reads(cell):
    """An offloading hook moves zState (and the LSTM's cell sequence) too: the hooks are
    given the inputs, h and those, and the backward reads each as the hook returns it."""
    module = build(cell, bidirectional=True)
    x0, hx = sample(module)
    T, N = x0.shape[:2]
    G, H = CELLS[cell].gates, module.hidden_size
    packed: list[tuple[int, ...]] = []

    def pack(t):
        packed.append(tuple(t.shape))
        return t.clone()

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        _output(module, x0.clone().requires_grad_(), hx).sum().backward()
    sequences = [(T, N, 2 * H), (T, N, 2 * G * H)]  # h, zState
    if cell == "lstm":
        sequences.append((T, N, 2 * H))  # the cell sequence
    assert sorted(s for s in packed if s[:2] == (T, N) and s != tuple(x0.shape)) == \
        sorted(sequences)


FORWARD_AD = r"forward-mode AD .* is not supported"


@pytest.mark.parametrize("cell", list(CELLS))
def test_forward_mode_ad_is_refused_not_zeroed(cell):
    module = build(cell).requires_grad_(False)
    x, hx = sample(module)
    name = CELLS[cell].module._cell.spec.name  # (the op's: singleGateRNN, LSTM, GRU)
    with pytest.raises(RuntimeError, match=rf"rnngraph\.torch\.{name}: {FORWARD_AD}"):
        torch.func.jvp(lambda a: _output(module, a, hx), (x,), (torch.ones_like(x),))
    with pytest.raises(RuntimeError, match=FORWARD_AD):
        torch.func.jacfwd(lambda a: _output(module, a, hx))(x)
    with forward_ad.dual_level(), pytest.raises(RuntimeError, match=FORWARD_AD):
        _output(module, forward_ad.make_dual(x, torch.ones_like(x)), hx)
    inputs = raw_inputs(cell)
    source = inputs.pop("source")
    raw = getattr(torch.ops.rnngraph, cell)
    with pytest.raises(RuntimeError, match=FORWARD_AD):
        torch.func.jvp(lambda a: raw(a, **inputs)[0], (source,), (torch.ones_like(source),))
    # outside a dual level the same calls run
    assert _output(module, x, hx).shape[0] == x.shape[0]


@pytest.mark.parametrize("cell", list(CELLS))
def test_batched_gradients_are_refused_by_name(cell):
    """autograd's vmap of the cotangents reaches the backward kernel with batched tensors:
    refused naming the op, by the module and the raw op; the looped jacobian works."""
    module = build(cell)
    x, _ = sample(module)
    x.requires_grad_()
    name = CELLS[cell].module.__name__
    out = _output(module, x, None)
    batched = torch.ones(2, *out.shape, dtype=out.dtype)
    with pytest.raises(RuntimeError, match=rf"(?i)^rnngraph\.torch\.{name}: batched gradients"):
        torch.autograd.grad(out, x, batched, is_grads_batched=True)
    with pytest.raises(RuntimeError, match=rf"(?i)^rnngraph\.torch\.{name}: batched gradients"):
        torch.autograd.functional.jacobian(lambda x: _output(module, x, None), x,
                                           vectorize=True)
    inputs = raw_inputs(cell)
    inputs["source"].requires_grad_()
    raw = getattr(torch.ops.rnngraph, cell)(**inputs)[0]
    with pytest.raises(RuntimeError, match=r"^\w+: batched gradients"):
        torch.autograd.grad(raw, inputs["source"], torch.ones(2, *raw.shape, dtype=raw.dtype),
                            is_grads_batched=True)
    jacobian = torch.autograd.functional.jacobian(lambda x: _output(module, x, None), x)
    assert jacobian.shape == (*out.shape, *x.shape) and jacobian.abs().sum() > 0
