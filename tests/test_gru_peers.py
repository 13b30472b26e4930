"""GRU against independent implementations (SPEC.md sections 5 and 6):

- ``torch.nn.GRU`` is rnngraph's ``resetGateFirst=True, resetAfter=True, flipZ=False`` with
  bias ``[b_ir + b_hr, b_iz + b_hz, b_in]`` and secondaryBias ``b_hn``: outputs and every
  gradient, float64.
- ONNX Runtime's ``GRU`` op (gate order ``[z, r, h]``, ``H_t = (1 − z) ⊙ h + z ⊙ H_{t−1}``,
  i.e. rnngraph's default order with ``flipZ=False``): ``linear_before_reset=0`` is rnngraph's
  reset-before GRU (``resetAfter=False``, bias ``Wb + Rb``), ``linear_before_reset=1`` its
  ``resetAfter=True`` (bias ``[Wb_z + Rb_z, Wb_r + Rb_r, Wb_h]``, secondaryBias ``Rb_h``).
  Forward only: onnxruntime has no training here.
- The reset-before GRU's gradients against torch autograd of a small differentiable torch
  GRU (tests/reference/torch_gru.py; itself checked against ``torch.nn.GRU`` for the
  reset-after variant).
"""

from __future__ import annotations

import zlib

import numpy as np
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper

import harness
import rnngraph as rg
from reference import gru_params_from_torch, state_from_torch, torch_grads_to_rnngraph
from reference.torch_gru import torch_gru

RETURN_ORDER = ("source", "recurrentWeight", "inputWeight", "bias", "initState", "secondaryBias")
TORCH_ATOL = 1e-12  # float64 both sides, O(1) values: only summation order differs


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors: torch's intra-op threads only contend with BLAS's on 2 cores."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def make_rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def run_gru(x, desc):
    """[h] or [h, zState] of rnngraph's GRU, through placeholders."""
    g = rg.Graph()
    dtype = rg.float64 if x["source"].dtype == np.float64 else rg.float32
    ph = {k: g.placeholder(shape=v.shape, dataType=dtype, name=k) for k, v in x.items()}
    outs = g.GRU(ph["source"], **{k: v for k, v in ph.items() if k != "source"}, descriptor=desc)
    result = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=outs)
    return [result[t] for t in outs]


def run_gradients(x, desc, dy, dS):
    """GRUGradients after a training forward; {label: gradient} in SPEC.md order, labelled by
    position, each checked to have its input's shape."""
    training = desc.copy()
    training.training = True
    h, z_state = run_gru(x, training)
    g = rg.Graph()
    arrays = x | {"sourceGradient": dy, "stateGradient": dS, "zState": z_state, "outputFwd": h}
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float64, name=k) for k, v in arrays.items()}
    grads = g.GRUGradients(ph["source"], **{k: v for k, v in ph.items() if k != "source"},
                           descriptor=desc)
    labels = [k for k in RETURN_ORDER if k in x]
    assert len(grads) == len(labels)
    result = g.run(feeds={ph[k]: v for k, v in arrays.items()}, targetTensors=grads)
    out = {label: result[t] for label, t in zip(labels, grads)}
    for label in labels:
        assert out[label].shape == x[label].shape, label
    return out


def max_difference(actual, expected):
    return float(np.max(np.abs(np.asarray(actual) - np.asarray(expected))))


# --- torch.nn.GRU -----------------------------------------------------------------------------

def torch_module(I, H, bidirectional, rng):
    module = torch.nn.GRU(I, H, bidirectional=bidirectional, dtype=torch.float64)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(0.6 * rng.standard_normal(tuple(p.shape))))
    return module


TORCH_SHAPES = [
    # T  N  I  H
    (5, 3, 4, 6),
    (1, 1, 3, 2),
]


@pytest.mark.parametrize("with_h0", [True, False], ids=["h0", "no-h0"])
@pytest.mark.parametrize("T, N, I, H", TORCH_SHAPES,
                         ids=[f"T{t}-N{n}-I{i}-H{h}" for t, n, i, h in TORCH_SHAPES])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_matches_torch_gru(bidirectional, T, N, I, H, with_h0):
    rng = make_rng("torch", bidirectional, T, N, I, H, with_h0)
    D = 2 if bidirectional else 1
    module = torch_module(I, H, bidirectional, rng)
    x_np = rng.standard_normal((T, N, I))
    h0_np = rng.standard_normal((D, N, H))
    dy = rng.standard_normal((T, N, D * H))
    dS = rng.standard_normal((N, D * H))

    x_t = torch.tensor(x_np, requires_grad=True)
    h0_t = torch.tensor(h0_np, requires_grad=True)
    out_t, hn_t = module(x_t, h0_t) if with_h0 else module(x_t)
    # L = Σ out·dy + Σ h_n·dS, with dS [N, D·H] as torch's [D, N, H].
    dS_t = torch.from_numpy(dS.reshape(N, D, H).transpose(1, 0, 2).copy())
    loss = (out_t * torch.from_numpy(dy)).sum() + (hn_t * dS_t).sum()
    loss.backward()

    x = {"source": x_np, **gru_params_from_torch(module)}
    if with_h0:
        x["initState"] = state_from_torch(h0_np)
    desc = rg.GRUDescriptor(resetGateFirst=True, resetAfter=True, flipZ=False,
                            bidirectional=bidirectional)
    (h,) = run_gru(x, desc)
    np.testing.assert_allclose(h, out_t.detach().numpy(), rtol=0, atol=TORCH_ATOL)
    np.testing.assert_allclose(harness.final(h, desc, H), state_from_torch(hn_t), rtol=0,
                               atol=TORCH_ATOL)

    grads = run_gradients(x, desc, dy, dS)
    expected = torch_grads_to_rnngraph("gru", module)
    expected["source"] = x_t.grad.numpy()
    if with_h0:
        expected["initState"] = state_from_torch(h0_t.grad)
    assert set(grads) == set(expected)
    for label in grads:
        np.testing.assert_allclose(grads[label], expected[label], rtol=0, atol=TORCH_ATOL,
                                   err_msg=f"d{label}")


# --- a differentiable torch GRU, every rnngraph option (SPEC.md section 5) --------------------

def torch_loss_and_grads(x_np: dict, desc, dy, dS):
    """Σ h·dy + Σ h_final·dS through ``torch_gru``; returns (h, {label: gradient})."""
    H = x_np["recurrentWeight"].shape[-1]
    x = {k: torch.tensor(v, requires_grad=k != "mask") for k, v in x_np.items()}
    h = torch_gru(x, desc)
    final = (torch.cat([h[-1, :, :H], h[0, :, H:]], dim=1) if desc.bidirectional
             else h[0] if desc.reverse else h[-1])
    loss = (h * torch.from_numpy(dy)).sum() + (final * torch.from_numpy(dS)).sum()
    loss.backward()
    grads = {k: (v.grad.numpy() if v.grad is not None else np.zeros(v.shape))
             for k, v in x.items() if k != "mask"}
    return h.detach().numpy(), grads


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
def test_hand_written_torch_gru_is_torch_nn_gru(bidirectional):
    """The oracle used below, with resetAfter=True, reproduces torch.nn.GRU and its autograd."""
    T, N, I, H = 4, 3, 5, 3
    rng = make_rng("oracle", bidirectional)
    D = 2 if bidirectional else 1
    module = torch_module(I, H, bidirectional, rng)
    x_np = rng.standard_normal((T, N, I))
    h0 = rng.standard_normal((D, N, H))
    dy, dS = rng.standard_normal((T, N, D * H)), rng.standard_normal((N, D * H))
    x_t, h0_t = torch.tensor(x_np, requires_grad=True), torch.tensor(h0, requires_grad=True)
    out_t, hn_t = module(x_t, h0_t)
    dS_t = torch.from_numpy(dS.reshape(N, D, H).transpose(1, 0, 2).copy())
    ((out_t * torch.from_numpy(dy)).sum() + (hn_t * dS_t).sum()).backward()

    x = {"source": x_np, **gru_params_from_torch(module), "initState": state_from_torch(h0)}
    desc = rg.GRUDescriptor(resetGateFirst=True, resetAfter=True, bidirectional=bidirectional)
    h, grads = torch_loss_and_grads(x, desc, dy, dS)
    np.testing.assert_allclose(h, out_t.detach().numpy(), rtol=0, atol=TORCH_ATOL)
    expected = torch_grads_to_rnngraph("gru", module)
    expected |= {"source": x_t.grad.numpy(), "initState": state_from_torch(h0_t.grad)}
    for label in expected:
        np.testing.assert_allclose(grads[label], expected[label], rtol=0, atol=TORCH_ATOL)


RESET_BEFORE = [
    dict(),
    dict(reverse=True),
    dict(bidirectional=True),
    dict(flipZ=True, resetGateFirst=True),
    dict(bidirectional=True, flipZ=True, mask=True),
    dict(reverse=True, resetGateFirst=True, mask=True, activations=("hardSigmoid", "relu", "relu")),
    dict(activations=("tanh", "none", "sigmoid"), T=1),
    dict(bidirectional=True, activations=("sigmoid", "hardSigmoid", "none"), noW=True),
]


def _rb_id(options):
    return "-".join(k if v is True else f"{k}={v}" for k, v in options.items()) or "default"


@pytest.mark.parametrize("options", RESET_BEFORE, ids=[_rb_id(o) for o in RESET_BEFORE])
def test_reset_before_gradients_match_torch_autograd(options):
    options = dict(options)
    T, N, I, H = options.pop("T", 5), 3, 4, 3
    act = options.pop("activations", ("sigmoid", "sigmoid", "tanh"))
    mask, no_w = options.pop("mask", False), options.pop("noW", False)
    desc = rg.GRUDescriptor(resetAfter=False,
                            updateGateActivation=getattr(rg.RNNActivation, act[0]),
                            resetGateActivation=getattr(rg.RNNActivation, act[1]),
                            outputGateActivation=getattr(rg.RNNActivation, act[2]), **options)
    D = 2 if desc.bidirectional else 1
    rng = make_rng("reset-before", _rb_id(options), act, mask, no_w, T)
    x = harness.make_inputs("GRU", rng, T=T, N=N, I=I, H=H, bidirectional=desc.bidirectional,
                            inputWeight=not no_w, mask=mask, secondaryBias=True)
    dy, dS = rng.standard_normal((T, N, D * H)), rng.standard_normal((N, D * H))

    h_torch, expected = torch_loss_and_grads(x, desc, dy, dS)
    (h,) = run_gru(x, desc)
    np.testing.assert_allclose(h, h_torch, rtol=0, atol=TORCH_ATOL)
    grads = run_gradients(x, desc, dy, dS)
    assert list(grads) == [k for k in RETURN_ORDER if k in x]
    for label in grads:
        np.testing.assert_allclose(grads[label], expected[label], rtol=0, atol=TORCH_ATOL,
                                   err_msg=f"d{label}")
    assert np.all(grads["secondaryBias"] == 0)


LARGER = [
    # T  N   I   H
    (7, 9, 20, 33),
    (2, 1, 1, 1),
]


@pytest.mark.parametrize("T, N, I, H", LARGER,
                         ids=[f"T{t}-N{n}-I{i}-H{h}" for t, n, i, h in LARGER])
@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("resetAfter", [False, True], ids=["resetBefore", "resetAfter"])
def test_other_sizes_and_a_fractional_mask_match_torch_autograd(resetAfter, bidirectional,
                                                                 T, N, I, H):
    """Sizes off any vector width, and a mask of values in [0, 1) (SPEC.md: it multiplies)."""
    desc = rg.GRUDescriptor(resetAfter=resetAfter, bidirectional=bidirectional, flipZ=True)
    D = 2 if bidirectional else 1
    rng = make_rng("larger", resetAfter, bidirectional, T, N, I, H)
    x = harness.make_inputs("GRU", rng, T=T, N=N, I=I, H=H, bidirectional=bidirectional,
                            mask=True, secondaryBias=True, scale=0.3)
    x["mask"] = rng.random(x["mask"].shape)
    dy, dS = rng.standard_normal((T, N, D * H)), rng.standard_normal((N, D * H))
    h_torch, expected = torch_loss_and_grads(x, desc, dy, dS)
    (h,) = run_gru(x, desc)
    np.testing.assert_allclose(h, h_torch, rtol=0, atol=TORCH_ATOL)
    grads = run_gradients(x, desc, dy, dS)
    for label in grads:
        np.testing.assert_allclose(grads[label], expected[label], rtol=0, atol=TORCH_ATOL,
                                   err_msg=f"d{label}")


# --- ONNX Runtime -----------------------------------------------------------------------------
# onnxruntime's CPU GRU kernel supports float32 only ("GRU operator does not support double
# yet"), so ONNX Runtime runs in float32. Its round-off over T = 6 steps of O(1) values is
# ~1e-7 (measured: at most 2.3e-7); the comparisons use 2e-6 absolute, against rnngraph in
# float32 and in float64.
ORT_ATOL = 2e-6

ONNX_ACTIVATIONS = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu",
                    "hardSigmoid": "HardSigmoid"}  # ONNX HardSigmoid defaults: 0.2, 0.5


def onnx_gru_session(direction, H, linear_before_reset, activations=None):
    """An InferenceSession of one ONNX GRU node (opset 14) with X, W, R, B, initial_h."""
    attributes = dict(hidden_size=H, direction=direction, linear_before_reset=linear_before_reset)
    if activations is not None:
        attributes["activations"] = activations
    node = helper.make_node("GRU", ["X", "W", "R", "B", "", "initial_h"], ["Y", "Y_h"],
                            **attributes)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
              for n in ("X", "W", "R", "B", "initial_h")]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("Y", "Y_h")]
    model = helper.make_model(helper.make_graph([node], "gru", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def onnx_case(direction, linear_before_reset, key, activations=None, T=6, N=3, I=4, H=5):
    """Run ONNX Runtime on random float32 inputs; return (rnngraph inputs, descriptor,
    ORT's Y as [T, N, D·H], ORT's Y_h as [N, D·H])."""
    D = 2 if direction == "bidirectional" else 1
    rng = make_rng("onnx", direction, linear_before_reset, key)
    f32 = lambda *s: (0.6 * rng.standard_normal(s)).astype(np.float32)
    X, W, R, B, h0 = f32(T, N, I), f32(D, 3 * H, I), f32(D, 3 * H, H), f32(D, 6 * H), f32(D, N, H)
    onnx_acts = None
    if activations is not None:
        onnx_acts = [ONNX_ACTIVATIONS[activations[0]], ONNX_ACTIVATIONS[activations[1]]] * D
    session = onnx_gru_session(direction, H, linear_before_reset, onnx_acts)
    Y, Y_h = session.run(None, {"X": X, "W": W, "R": R, "B": B, "initial_h": h0})
    assert Y.shape == (T, D, N, H) and Y_h.shape == (D, N, H)

    Wb, Rb = B[:, :3 * H], B[:, 3 * H:]
    if linear_before_reset:
        bias = np.concatenate([Wb[:, :2 * H] + Rb[:, :2 * H], Wb[:, 2 * H:]], axis=1)
    else:
        bias = Wb + Rb
    x = {"source": X, "recurrentWeight": R if D == 2 else R[0],
         "inputWeight": W.reshape(D * 3 * H, I), "bias": bias.reshape(D * 3 * H),
         "initState": state_from_torch(h0).astype(np.float32)}
    if linear_before_reset:
        x["secondaryBias"] = Rb[:, 2 * H:].reshape(D * H)
    flags = dict(resetAfter=bool(linear_before_reset), flipZ=False, resetGateFirst=False,
                 reverse=direction == "reverse", bidirectional=direction == "bidirectional")
    if activations is not None:
        act = {name: getattr(rg.RNNActivation, a) for name, a in zip(
            ("updateGateActivation", "resetGateActivation"), (activations[0],) * 2)}
        flags |= act | {"outputGateActivation": getattr(rg.RNNActivation, activations[1])}
    desc = rg.GRUDescriptor(**flags)
    return x, desc, Y.transpose(0, 2, 1, 3).reshape(T, N, D * H), state_from_torch(Y_h)


def check_against_onnx(x, desc, Y, Y_h):
    """rnngraph in float32 and float64 against ORT; returns the float64 max difference."""
    H = x["recurrentWeight"].shape[-1]
    (h32,) = run_gru(x, desc)
    assert h32.dtype == np.float32
    np.testing.assert_allclose(h32, Y, rtol=0, atol=ORT_ATOL)
    np.testing.assert_allclose(harness.final(h32, desc, H), Y_h, rtol=0, atol=ORT_ATOL)
    (h64,) = run_gru({k: v.astype(np.float64) for k, v in x.items()}, desc)
    np.testing.assert_allclose(h64, Y, rtol=0, atol=ORT_ATOL)
    np.testing.assert_allclose(harness.final(h64, desc, H), Y_h, rtol=0, atol=ORT_ATOL)
    return max(max_difference(h64, Y), max_difference(harness.final(h64, desc, H), Y_h))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("linear_before_reset", [0, 1],
                         ids=["lbr0-resetBefore", "lbr1-resetAfter"])
def test_matches_onnxruntime(linear_before_reset, direction):
    x, desc, Y, Y_h = onnx_case(direction, linear_before_reset, "default")
    check_against_onnx(x, desc, Y, Y_h)
    # Non-trivial: the answer depends on linear_before_reset.
    other = dict(x)
    other.pop("secondaryBias", None)
    flipped = desc.copy()
    flipped.resetAfter = not desc.resetAfter
    (h_other,) = run_gru(other, flipped)
    assert max_difference(h_other, Y) > 1e-3


ONNX_ACTIVATION_CASES = [("hardSigmoid", "relu"), ("sigmoid", "hardSigmoid"), ("tanh", "sigmoid")]


@pytest.mark.parametrize("activations", ONNX_ACTIVATION_CASES, ids=lambda a: f"f={a[0]},g={a[1]}")
@pytest.mark.parametrize("linear_before_reset", [0, 1],
                         ids=["lbr0-resetBefore", "lbr1-resetAfter"])
def test_matches_onnxruntime_with_other_activations(linear_before_reset, activations):
    x, desc, Y, Y_h = onnx_case("bidirectional", linear_before_reset, activations, activations)
    check_against_onnx(x, desc, Y, Y_h)
