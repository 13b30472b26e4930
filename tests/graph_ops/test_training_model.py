"""The whole model of notebooks/02_training.ipynb (examples/char_lstm.py: gather as the
embedding, LSTM, matmul head, softMaxCrossEntropy, Adam through assign), in float64: its loss
gradient against central differences and against the same model in PyTorch, and its
training step against a NumPy Adam step on PyTorch's gradients."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import rnngraph as rg
from graph_ops.helpers import numpy_adam
from toolkit.finite_differences import numerical_gradients, record
from toolkit.tolerances import relative_error

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from char_lstm import (
    CharLSTM,
    Sizes,
    initial_parameters,
    torch_gradients,
    torch_loss,
    torch_twin,
)

SIZES = Sizes(vocab=7, embed=3, hidden=4, T=5, N=2)


@pytest.fixture
def batch(rng):
    tokens = rng.integers(0, SIZES.vocab, (SIZES.T + 1, SIZES.N)).astype(np.int32)
    tokens[0, 0] = tokens[1, 1] = 3  # a repeated index: its embedding row gets two gradients
    return tokens[:-1], tokens[1:]


@pytest.fixture
def model():
    return CharLSTM(SIZES, seed=1, dataType=rg.float64)


def test_the_loss_gradient_matches_central_differences(model, batch):
    _, analytic = model.loss_and_gradients(*batch)

    def loss(parameters):
        model.load(parameters)
        return model.loss_and_gradients(*batch)[0]

    worst = 0.0
    parameters = {k: v.copy() for k, v in model.parameters().items()}  # perturbed in place
    for name, numeric in numerical_gradients(loss, parameters).items():
        error = relative_error(analytic[name], numeric)
        worst = max(worst, record(error, f"char LSTM model (FD): {name}"))
    assert worst < 1e-7, worst


def test_loss_and_gradients_match_the_same_model_in_pytorch(model, batch):
    import torch

    loss, ours = model.loss_and_gradients(*batch)
    twin = torch_twin(SIZES, model.parameters())
    theirs_loss = torch_loss(twin, *batch)
    theirs_loss.backward()
    theirs = torch_gradients(twin)
    assert abs(loss - theirs_loss.item()) < 1e-13
    for name in ours:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=0, atol=1e-13, err_msg=name)
    assert torch.get_default_dtype() == torch.float32  # (the twin ran in float64 by itself)


def test_a_training_step_is_adam_on_those_gradients(batch):
    """Three steps of the graph's train_step against NumPy's Adam (Apple's update rule) fed
    with PyTorch's gradients of the same model."""
    lr, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    parameters = initial_parameters(SIZES, seed=4, dtype=np.float64)
    model = CharLSTM(SIZES, dataType=rg.float64, learningRate=lr, parameters=parameters)
    state = {
        k: {"values": v, "momentum": np.zeros_like(v), "velocity": np.zeros_like(v)}
        for k, v in parameters.items()
    }
    for step in range(1, 4):
        twin = torch_twin(SIZES, {k: s["values"] for k, s in state.items()})
        torch_loss(twin, *batch).backward()
        grads = torch_gradients(twin)
        state = {
            k: numpy_adam(s, [grads[k]], lr, b1, b2, eps, first=step)[0] for k, s in state.items()
        }
        expected = {k: s["values"] for k, s in state.items()}
        model.train_step(*batch)
        for k, value in model.parameters().items():
            np.testing.assert_allclose(
                value, expected[k], rtol=0, atol=1e-12, err_msg=f"{k} @ {step}"
            )


def test_training_lowers_the_loss_and_generation_uses_the_alphabet(rng):
    from char_lstm import TEXT, Codec, batches

    text = TEXT.read_text()
    codec = Codec(text)
    sizes = Sizes(vocab=len(codec.alphabet), embed=8, hidden=32, T=24, N=8)
    model = CharLSTM(sizes, seed=0, learningRate=1e-2)
    data = batches(codec.encode(text), sizes, rng)
    losses = [model.train_step(*next(data)) for _ in range(60)]
    assert np.mean(losses[-10:]) < 0.75 * np.mean(losses[:5])
    sample = model.sample(codec, "The ", 40)
    assert sample.startswith("The ") and len(sample) == 44 and set(sample) <= set(codec.alphabet)
