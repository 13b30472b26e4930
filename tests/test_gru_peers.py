"""GRU against independent implementations (SPEC.md sections 5 and 6):

- ``torch.nn.GRU`` is rnngraph's ``resetGateFirst=True, resetAfter=True, flipZ=False`` with
  bias ``[b_ir + b_hr, b_iz + b_hz, b_in]`` and secondaryBias ``b_hn``
  (tests/reference/torch_mapping.py): rnngraph's outputs and every gradient, and the NumPy
  reference's outputs, float64.
- A differentiable torch GRU (tests/reference/torch_gru.py), checked here against
  ``torch.nn.GRU``: its autograd gradients against GRUGradients for the options
  ``torch.nn.GRU`` lacks (reset before, flipZ, either gate order, any activation, masks
  including fractional ones, no inputWeight, other sizes).
- ONNX Runtime's ``GRU`` (gate order ``[z, r, h]``, ``H_t = (1 − z) ⊙ h + z ⊙ H_{t−1}``:
  rnngraph's default order, flipZ false): ``linear_before_reset=0`` is the reset-before GRU
  (bias ``Wb + Rb``), ``linear_before_reset=1`` ``resetAfter`` (bias ``[Wb_z + Rb_z,
  Wb_r + Rb_r, Wb_h]``, secondaryBias ``Rb_h``). Forward only, float32 only.
"""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

from reference import gru_params_from_torch, state_from_torch, torch_grads_to_rnngraph
from reference.torch_gru import torch_gru
from toolkit import (
    Case,
    Signals,
    assert_all_close,
    assert_close,
    cases,
    final,
    forward,
    gradients,
    make_inputs,
    reference,
    relative_error,
    signals,
)

CELL = "GRU"


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors: torch's intra-op threads only contend with BLAS's on 2 cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --- torch.nn.GRU -----------------------------------------------------------------------------

def torch_nn_gru(case, rng):
    """A torch.nn.GRU of the case's sizes, weights 0.6·N(0, 1) from ``rng``; rnngraph inputs
    from the same numbers; and torch's h, final state and autograd gradients (as rnngraph's
    labels) of L = Σ h·dy + Σ h_n·dS, with the signals."""
    T, N, I, H, D = case.T, case.N, case.I, case.H, case.D
    module = torch.nn.GRU(I, H, bidirectional=case.bidirectional, dtype=torch.float64)
    with torch.no_grad():
        for param in module.parameters():
            param.copy_(torch.from_numpy(0.6 * rng.standard_normal(tuple(param.shape))))
    source = torch.from_numpy(rng.standard_normal((T, N, I))).requires_grad_(True)
    h0 = torch.from_numpy(rng.standard_normal((D, N, H))).requires_grad_(True)
    dy, dS = rng.standard_normal((T, N, D * H)), rng.standard_normal((D, N, H))
    out, h_n = module(source, h0) if case.initState else module(source)
    ((out * torch.from_numpy(dy)).sum() + (h_n * torch.from_numpy(dS)).sum()).backward()

    x = {"source": source.detach().numpy().copy(), **gru_params_from_torch(module)}
    expected = torch_grads_to_rnngraph("gru", module) | {"source": source.grad.numpy()}
    if case.initState:
        x["initState"], expected["initState"] = state_from_torch(h0), state_from_torch(h0.grad)
    torch_out = {"h": out.detach().numpy(), "final": state_from_torch(h_n)}
    return x, Signals(dy, state_from_torch(dS)), torch_out, expected


@pytest.mark.parametrize("case", cases(CELL, *(
    f"{d}-resetGateFirst-resetAfter{h0}-b2-{sizes}" for d in ("fwd", "bi")
    for sizes in ("T5-N3-I4-H6", "T1-N1") for h0 in ("-h0", ""))))
def test_matches_torch_gru(case, rng):
    x, sig, torch_out, expected = torch_nn_gru(case, rng)
    for name, out in (("rnngraph", forward(case, x)), ("reference", reference(case, x))):
        assert_all_close({"h": out["h"], "final": final(out["h"], case)}, torch_out, "float64",
                         name)
    assert_all_close(gradients(case, x, sig), expected, "float64", "gradients vs torch")


# --- the differentiable torch GRU, every rnngraph option -----------------------------------

def torch_autograd(case, x: dict, sig) -> tuple:
    """h of ``torch_gru`` and its autograd gradients of L = Σ h·dy + Σ h_final·dS, for the
    inputs the gradient op returns gradients for."""
    tensors = {k: torch.tensor(v, requires_grad=k in case.returned) for k, v in x.items()}
    h = torch_gru(tensors, case.descriptor())
    # Each direction's final state (SPEC.md section 4), picked out by flat position.
    positions = final(np.arange(h.numel()).reshape(h.shape), case)
    h_final = h.reshape(-1)[torch.from_numpy(positions)]
    ((h * torch.from_numpy(sig.dy)).sum() + (h_final * torch.from_numpy(sig.dS)).sum()).backward()
    grads = {k: np.zeros(v.shape) if tensors[k].grad is None else tensors[k].grad.numpy()
             for k, v in x.items() if k in case.returned}
    return h.detach().numpy(), grads


@pytest.mark.parametrize("case", cases(CELL, *(
    f"{d}-resetGateFirst-resetAfter-h0-b2-T4-N3-I5-H3" for d in ("fwd", "bi"))))
def test_hand_written_torch_gru_is_torch_nn_gru(case, rng):
    """The oracle of the tests below, with torch.nn.GRU's options, is torch.nn.GRU: h and
    every autograd gradient."""
    x, sig, torch_out, expected = torch_nn_gru(case, rng)
    h, grads = torch_autograd(case, x, sig)
    assert_close(h, torch_out["h"], "float64", "h")
    assert_all_close(grads, expected, "float64", "gradients")


RESET_BEFORE = [text + "-N3-I4-H3" for text in (
    "fwd-h0-b2-T5",
    "reverse-h0-b2-T5",
    "bi-h0-b2-T5",
    "fwd-resetGateFirst-flipZ-h0-b2-T5",
    "bi-flipZ-h0-b2-mask-T5",
    "reverse-resetGateFirst-z=hardSigmoid-r=relu-o=relu-h0-b2-mask-T5",
    "fwd-z=tanh-r=none-o=sigmoid-h0-b2-T1",
    "bi-r=hardSigmoid-o=none-noW-h0-b2-T5",
)]
# Sizes off any vector width, and fractional masks (SPEC.md: the mask multiplies).
OTHER_SIZES = [f"{d}{a}-flipZ-h0-b2-fracmask-{sizes}" for a in ("", "-resetAfter")
               for d in ("fwd", "bi") for sizes in ("T7-N9-I20-H33", "T2-N1-I1-H1")]


@pytest.mark.parametrize("case", cases(CELL, *RESET_BEFORE, *OTHER_SIZES))
def test_gradients_match_torch_autograd(case, rng):
    x = make_inputs(case, rng, scale=0.3 if case.H > 8 else 0.6)
    sig = signals(case, rng)
    h_torch, expected = torch_autograd(case, x, sig)
    assert_close(forward(case, x)["h"], h_torch, "float64", "h")
    grads = gradients(case, x, sig)
    assert_all_close(grads, expected, "float64", "gradients vs torch autograd")
    if not case.resetAfter:  # SPEC.md section 5: unused, so exactly zero
        assert np.all(grads["secondaryBias"] == 0)


# --- ONNX Runtime ----------------------------------------------------------------------------

ONNX_ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu",
                    "hardSigmoid": "HardSigmoid"}  # ONNX HardSigmoid defaults: 0.2, 0.5
ONNX_DIRECTIONS = {"fwd": "forward", "reverse": "reverse", "bi": "bidirectional"}


def onnxruntime_gru(case, rng):
    """Random float32 ONNX inputs (X, W, R, B, initial_h; 0.6·N(0, 1)) run through ONNX
    Runtime's GRU (opset 14, linear_before_reset = the case's resetAfter, activations f = the
    case's z and r, g = its o); returns (rnngraph's inputs, {"h": Y [T, N, D·H], "final":
    Y_h [N, D·H]})."""
    T, N, I, H, D = case.T, case.N, case.I, case.H, case.D
    f, g = case.activation("updateGateActivation"), case.activation("outputGateActivation")
    assert case.activation("resetGateActivation") == f, "ONNX: one f for z and r"
    lbr = int(case.resetAfter)
    attributes = {"hidden_size": H, "direction": ONNX_DIRECTIONS[case.direction],
                  "linear_before_reset": lbr,
                  "activations": [ONNX_ACTIVATIONS[f], ONNX_ACTIVATIONS[g]] * D}
    node = helper.make_node("GRU", ["X", "W", "R", "B", "", "initial_h"], ["Y", "Y_h"],
                            **attributes)
    names = ("X", "W", "R", "B", "initial_h")
    graph = helper.make_graph(
        [node], "gru", [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("Y", "Y_h")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    GH = case.G * H
    shapes = ((T, N, I), (D, GH, I), (D, GH, H), (D, 2 * GH), (D, N, H))
    X, W, R, B, h0 = ((0.6 * rng.standard_normal(s)).astype(np.float32) for s in shapes)
    Y, Y_h = session.run(None, {"X": X, "W": W, "R": R, "B": B, "initial_h": h0})
    assert Y.shape == (T, D, N, H) and Y_h.shape == (D, N, H)

    Wb, Rb = B[:, :GH], B[:, GH:]  # gate blocks [z, r, h]: Rb_h is the last H
    # linear_before_reset = 0: all of Rb joins the bias; 1: Rb_h is the secondaryBias.
    bias = Wb + np.concatenate([Rb[:, :-H], (1 - lbr) * Rb[:, -H:]], axis=1)
    x = {"source": X, "recurrentWeight": R if D == 2 else R[0],
         "inputWeight": W.reshape(D * GH, I), "bias": bias.reshape(D * GH),
         "initState": state_from_torch(h0).astype(np.float32)}
    if lbr:
        x["secondaryBias"] = Rb[:, -H:].reshape(D * H)
    return x, {"h": Y.transpose(0, 2, 1, 3).reshape(T, N, D * H), "final": state_from_torch(Y_h)}


ONNX_CASES = [Case(CELL, d, {"z": f, "r": f, "o": g}, resetAfter=after, initState="[N,DH]",
                   secondaryBias=after, T=6, N=3, I=4, H=5, dtype="float32").param()
              for after in (False, True)
              for d, f, g in (("fwd", "sigmoid", "tanh"), ("reverse", "sigmoid", "tanh"),
                              ("bi", "sigmoid", "tanh"), ("bi", "hardSigmoid", "relu"),
                              ("bi", "sigmoid", "hardSigmoid"), ("bi", "tanh", "sigmoid"))]


@pytest.mark.parametrize("case", ONNX_CASES)
def test_matches_onnxruntime(case, rng):
    """rnngraph in float32 and on the same numbers in float64 against ONNX Runtime's float32;
    the answer depends on linear_before_reset (so the mapping is not vacuous)."""
    x, onnx_out = onnxruntime_gru(case, rng)
    x64 = {k: v.astype(np.float64) for k, v in x.items()}
    for dtype_case, inputs in ((case, x), (case.but(dtype="float64"), x64)):
        h = forward(dtype_case, inputs)["h"]
        assert_all_close({"h": h, "final": final(h, case)}, onnx_out, "onnxruntime_float32",
                         dtype_case.dtype)
    flipped = case.but(resetAfter=not case.resetAfter, secondaryBias=False, dtype="float64")
    other = {k: v for k, v in x64.items() if k != "secondaryBias"}
    assert relative_error(forward(flipped, other)["h"], onnx_out["h"]) > 1e-3
