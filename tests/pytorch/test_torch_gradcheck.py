"""``torch.autograd.gradcheck`` (float64 central differences against the autograd formula that
calls rnngraph's gradient ops) for every option that changes the math: each activation value on
each gate, peephole, forgetGateLast, resetAfter, resetGateFirst, flipZ, masks (0/1 and
fractional), reverse, bidirectional, no inputWeight, no bias, zero or non-zero hx.

Each case runs twice: through the module (gradients w.r.t. input, hx and every parameter;
outputs output, h_n, c_n) and through the raw op with every input it takes (outputs h, the final
state and the LSTM's final cell). Inputs are redrawn until no pre-activation lies within
``MARGIN`` of a relu or hardSigmoid kink (checked on the NumPy reference), and a hardSigmoid
gate must see both its slope and a saturated piece.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.func import functional_call

import rnngraph as rg
import rnngraph.torch as rt

A = rg.RNNActivation
MODULES = {"single_gate_rnn": rt.SingleGateRNN, "lstm": rt.LSTM, "gru": rt.GRU}
DESCRIPTORS = {"single_gate_rnn": rg.SingleGateRNNDescriptor, "lstm": rg.LSTMDescriptor,
               "gru": rg.GRUDescriptor}
PARAMETERS = ("inputWeight", "recurrentWeight", "bias", "peephole", "secondaryBias")
SLOTS = {"single_gate_rnn": ("activation",),
         "lstm": ("inputGateActivation", "forgetGateActivation", "cellGateActivation",
                  "outputGateActivation", "activation"),
         "gru": ("updateGateActivation", "resetGateActivation", "outputGateActivation")}
KINKS = {A.relu: (0.0,), A.hardSigmoid: (-2.5, 2.5)}
MARGIN = 1e-3  # ≫ gradcheck's eps = 1e-6 times any input's weight on a pre-activation
T, N, I, H = 3, 2, 2, 2
# Central differences with eps = 1e-6 in float64 are good to ~1e-10 (rounding ~1e-16/eps):
# far tighter than gradcheck's defaults (atol 1e-5, rtol 1e-3).
TIGHT = {"eps": 1e-6, "atol": 1e-8, "rtol": 1e-6}


def case(cell: str, name: str, inputs: dict | None = None, **options):
    return pytest.param(cell, options, inputs or {}, id=f"{cell}-{name}")


CASES = [
    *(case(cell, f"{slot}={value.name}", **{slot: value})
      for cell, slots in SLOTS.items() for slot in slots for value in A),
    *(case(cell, name, inputs, **options) for cell in MODULES for name, inputs, options in (
        ("reverse", {}, {"reverse": True}),
        ("bidirectional", {}, {"bidirectional": True}),
        ("mask01", {"mask": "binary"}, {}),
        ("mask_fraction-bidirectional", {"mask": "fraction"}, {"bidirectional": True}),
        ("no_inputWeight", {"inputWeight": False}, {}),
        ("no_inputWeight-bidirectional", {"inputWeight": False}, {"bidirectional": True}),
        ("no_bias", {"bias": False}, {}),
        ("zero_hx", {"initState": False}, {}),
    )),
    case("lstm", "peephole", {"peephole": True}),
    case("lstm", "peephole-bidirectional", {"peephole": True}, bidirectional=True),
    case("lstm", "forgetGateLast", forgetGateLast=True),
    case("lstm", "forgetGateLast-peephole-reverse", {"peephole": True}, forgetGateLast=True,
         reverse=True),
    *(case("gru", f"resetAfter={after}-resetGateFirst={first}-flipZ={flip}",
           resetAfter=after, resetGateFirst=first, flipZ=flip)
      for after in (False, True) for first in (False, True) for flip in (False, True)),
    case("gru", "resetAfter-bidirectional-mask", {"mask": "binary"}, resetAfter=True,
         bidirectional=True),
    case("gru", "resetAfter-no_bias", {"bias": False}, resetAfter=True),
]


def _activation(cell: str, options: dict, slot: str) -> A:
    return A(DESCRIPTORS[cell](**options).as_dict()[slot])


def _usable(cell: str, options: dict, preactivations: dict[str, np.ndarray]) -> bool:
    """No pre-activation near a kink, and every hardSigmoid slot sees both pieces."""
    for slot, values in preactivations.items():
        activation = _activation(cell, options, slot)
        if any(np.min(np.abs(values - kink)) < MARGIN for kink in KINKS.get(activation, ())):
            return False
        if activation is A.hardSigmoid and not (np.any(np.abs(values) < 2.5)
                                                and np.any(np.abs(values) > 2.5)):
            return False
    return True


def _inputs(cell, options, spec, draw_inputs, run_reference) -> dict[str, torch.Tensor]:
    hard = any(_activation(cell, options, slot) is A.hardSigmoid for slot in SLOTS[cell])
    for _ in range(50):  # a hardSigmoid gate needs larger weights to saturate
        inputs = draw_inputs(cell, options, T=T, N=N, I=I, H=H, scale=2.0 if hard else 0.6,
                             **spec)
        _, preactivations = run_reference(cell, inputs, options, return_preactivations=True)
        if _usable(cell, options, preactivations):
            return {label: torch.from_numpy(value) for label, value in inputs.items()}
    raise AssertionError("no draw away from the kinks")


def _module(cell: str, options: dict, inputs: dict[str, torch.Tensor]) -> torch.nn.Module:
    input_size = I if "inputWeight" in inputs else None  # None: the input is pre-projected
    module = MODULES[cell](input_size, H, bias="bias" in inputs,
                           descriptor=DESCRIPTORS[cell](**options), dtype=torch.float64,
                           **({"peephole": "peephole" in inputs} if cell == "lstm" else {}))
    expected = {label for label in inputs if label in PARAMETERS}
    assert {name for name, _ in module.named_parameters()} == expected
    return module


@pytest.mark.parametrize(("cell", "options", "spec"), CASES)
def test_module_gradcheck(cell, options, spec, draw_inputs, run_reference):
    inputs = _inputs(cell, options, spec, draw_inputs, run_reference)
    module = _module(cell, options, inputs)
    D = 2 if options.get("bidirectional") else 1
    names = [name for name, _ in module.named_parameters()]
    states = [inputs[label].reshape(N, D, H).transpose(0, 1).contiguous()
              for label in ("initState", "initCell") if label in inputs]
    mask = inputs.get("mask")
    differentiable = tuple(t.clone().requires_grad_() for t in
                           (inputs["source"], *states, *(inputs[name] for name in names)))

    def f(source, *rest):
        hx = None if not states else tuple(rest[:2]) if cell == "lstm" else rest[0]
        parameters = dict(zip(names, rest[len(states):]))
        output, state = functional_call(module, parameters, (source, hx, mask))
        return output, *(state if cell == "lstm" else (state,))

    assert torch.autograd.gradcheck(f, differentiable, **TIGHT)


@pytest.mark.parametrize(("cell", "options", "spec"), CASES)
def test_op_gradcheck(cell, options, spec, draw_inputs, run_reference):
    inputs = _inputs(cell, options, spec, draw_inputs, run_reference)
    constants = {"mask": inputs.pop("mask")} if "mask" in inputs else {}
    labels = list(inputs)
    op = getattr(torch.ops.rnngraph, cell)
    finals = 2 if cell == "lstm" else 1  # state (and cell)

    def f(*tensors):
        return op(**dict(zip(labels, tensors)), **constants, **options)[:1 + finals]

    differentiable = tuple(t.clone().requires_grad_() for t in inputs.values())
    assert torch.autograd.gradcheck(f, differentiable, **TIGHT)


def test_op_gradcheck_secondary_bias_unused_before_reset(draw_inputs):
    """A reset-before GRU ignores secondaryBias: its gradient is zero (SPEC.md section 6)."""
    inputs = {k: torch.from_numpy(v).requires_grad_()
              for k, v in draw_inputs("gru", {}, T=T, N=N, I=I, H=H, secondaryBias=True).items()}
    h, state, *_ = torch.ops.rnngraph.gru(**inputs)
    (h.sum() + state.sum()).backward()
    assert torch.count_nonzero(inputs["secondaryBias"].grad) == 0
    assert torch.count_nonzero(inputs["recurrentWeight"].grad) > 0


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("cell", MODULES)
def test_op_gradcheck_without_steps(cell, bidirectional, draw_inputs):
    """T = 0: the final state (and cell) is the initial one, so its gradient passes straight
    through and the weights get zero gradients."""
    options = {"bidirectional": bidirectional}
    inputs = {k: torch.from_numpy(v) for k, v in
              draw_inputs(cell, options, T=0, N=N, I=I, H=H).items()}
    source = inputs.pop("source")  # [0, N, I]: nothing to differentiate
    labels = list(inputs)
    op = getattr(torch.ops.rnngraph, cell)

    def f(*tensors):
        outputs = op(source, **dict(zip(labels, tensors)), **options)
        return outputs[1:3 if cell == "lstm" else 2]

    differentiable = tuple(t.clone().requires_grad_() for t in inputs.values())
    assert torch.autograd.gradcheck(f, differentiable, **TIGHT)
    f(*differentiable)[0].sum().backward()
    assert torch.equal(differentiable[labels.index("initState")].grad,
                       torch.ones_like(inputs["initState"]))
    assert torch.count_nonzero(differentiable[labels.index("recurrentWeight")].grad) == 0
