"""rnngraph's modules inside ``torch.compile`` and ``torch.export``.

A small language model (nn.Embedding → rnngraph.torch.LSTM → nn.Linear → cross-entropy)
compiles with ``fullgraph=True`` (which raises on a graph break) under the default inductor
backend, in one graph with no breaks, and matches eager in the loss and in every parameter's
gradient. ``torch.export`` keeps the LSTM as one ``torch.ops.rnngraph.lstm`` node and the
exported module gives the eager loss. A GRU and a SingleGateRNN model compile too.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import rnngraph as rg
import rnngraph.torch as rt
from toolkit import assert_close

# torch 2.13's inductor imports torch.utils.mkldnn, whose class body uses the deprecated
# torch.jit.script_method: torch's own warning, not rnngraph's.
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
V, E, H, T, N = 11, 4, 3, 5, 2
RECURRENT = {
    "lstm": lambda: rt.LSTM(E, H, dtype=torch.float64),
    "gru": lambda: rt.GRU(E, H, descriptor=rg.GRUDescriptor(resetAfter=True, bidirectional=True),
                          dtype=torch.float64),
    "single_gate_rnn": lambda: rt.SingleGateRNN(
        E, H, descriptor=rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.tanh),
        dtype=torch.float64),
}


class LanguageModel(nn.Module):
    """Cross-entropy of time-major token ids ``[T, N]`` through one recurrent layer."""

    def __init__(self, recurrent: nn.Module) -> None:
        super().__init__()
        self.embedding = nn.Embedding(V, E, dtype=torch.float64)
        self.recurrent = recurrent
        D = 2 if recurrent.descriptor.bidirectional else 1
        self.head = nn.Linear(D * H, V, dtype=torch.float64)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        output, _ = self.recurrent(self.embedding(tokens))
        logits = self.head(output)
        return nn.functional.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _model_and_data(kind: str) -> tuple[LanguageModel, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = LanguageModel(RECURRENT[kind]())
    tokens = torch.randint(0, V, (T, N))
    targets = torch.randint(0, V, (T, N))
    return model, tokens, targets


def _loss_and_gradients(model: nn.Module, call, tokens, targets):
    model.zero_grad(set_to_none=True)
    loss = call(tokens, targets)
    loss.backward()
    gradients = {name: p.grad.clone() for name, p in model.named_parameters()}
    return loss.detach(), gradients


@pytest.mark.parametrize("kind", RECURRENT)
def test_compiled_model_matches_eager(kind):
    model, tokens, targets = _model_and_data(kind)
    eager_loss, eager_gradients = _loss_and_gradients(model, model, tokens, targets)

    explanation = torch._dynamo.explain(model)(tokens, targets)
    assert explanation.graph_count == 1
    assert explanation.graph_break_count == 0
    torch._dynamo.reset()

    compiled = torch.compile(model, fullgraph=True)  # inductor, the default backend
    for _ in range(2):  # the second call runs the cached compiled code
        loss, gradients = _loss_and_gradients(model, compiled, tokens, targets)
        assert_close(loss.numpy(), eager_loss.numpy(), "float64", "loss")
        assert set(gradients) == set(eager_gradients)
        for name, gradient in eager_gradients.items():
            assert torch.count_nonzero(gradient) > 0, name
            assert_close(gradients[name].numpy(), gradient.numpy(), "float64", name)


def test_compiled_graph_calls_the_op_once():
    """Dynamo's graph holds the rnngraph op itself (no fallback to eager around it)."""
    model, tokens, targets = _model_and_data("lstm")
    graphs = []

    def backend(graph_module, example_inputs):
        graphs.append(graph_module)
        return graph_module.forward

    torch.compile(model, backend=backend, fullgraph=True)(tokens, targets).backward()
    assert len(graphs) == 1
    targets_called = [node.target for node in graphs[0].graph.nodes
                      if node.op == "call_function"]
    assert targets_called.count(torch.ops.rnngraph.lstm) == 1


def test_export():
    model, tokens, targets = _model_and_data("lstm")
    eager_loss = model(tokens, targets).detach()
    exported = torch.export.export(model, (tokens, targets))
    calls = [node.target for node in exported.graph.nodes if node.op == "call_function"]
    assert calls.count(torch.ops.rnngraph.lstm.default) == 1
    loss = exported.module()(tokens, targets)
    assert_close(loss.detach().numpy(), eager_loss.numpy(), "float64", "exported loss")
    # Other data through the exported program: the graph is not specialised to one input.
    other = torch.randint(0, V, (T, N))
    assert_close(exported.module()(other, targets).detach().numpy(),
                 model(other, targets).detach().numpy(), "float64", "other tokens")


def test_export_with_dynamic_sizes():
    """The fake kernel's shapes follow symbolic T and N: one export serves other sizes."""
    model, tokens, targets = _model_and_data("lstm")
    steps, batch = torch.export.Dim("T", min=2, max=64), torch.export.Dim("N", min=2, max=64)
    sizes = {0: steps, 1: batch}
    exported = torch.export.export(model, (tokens, targets),
                                   dynamic_shapes={"tokens": sizes, "targets": sizes})
    other_tokens, other_targets = torch.randint(0, V, (9, 3)), torch.randint(0, V, (9, 3))
    assert_close(exported.module()(other_tokens, other_targets).detach().numpy(),
                 model(other_tokens, other_targets).detach().numpy(), "float64", "T=9, N=3")
