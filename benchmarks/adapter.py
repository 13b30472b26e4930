"""Training steps through rnngraph's PyTorch adapter (rnngraph.torch), for
bench_torch_adapter.py.

row_step: the row's layer as an rnngraph.torch module converted from the torch.nn module that
peers.torch_step times (same weights, same inputs), and the same step: forward, then
``output.backward(dy)`` with gradients of every parameter, the input and h0 (and c0). Rows
without a torch twin (15, reset-before GRU) build the module from the row's descriptor.

model_step: a small language model (embedding, one recurrent layer, a linear head,
cross-entropy), so torch's own layers run between rnngraph's forward and backward calls;
``recurrent="torch"`` gives the same model with torch.nn.LSTM.
"""

from __future__ import annotations

from collections.abc import Callable

from rows import Row

MODEL = {"vocab": 2000, "embed": 256, "hidden": 512, "T": 35, "N": 16}  # a PTB-sized LM step


def row_step(row: Row, seed: int = 0) -> Callable | None:
    import torch

    import rnngraph
    import rnngraph.torch as rt

    torch.manual_seed(seed)
    D = 2 if row.bidirectional else 1
    if row.has_torch_twin:
        twin = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN": torch.nn.RNN}[row.cell]
        ours = {"LSTM": rt.LSTM, "GRU": rt.GRU, "RNN": rt.SingleGateRNN}[row.cell]
        rnn = ours.from_torch(twin(row.I, row.H, bidirectional=row.bidirectional))
    else:
        rnn = rt.GRU(row.I, row.H, descriptor=rnngraph.GRUDescriptor(
            bidirectional=row.bidirectional, resetAfter=row.resetAfter))
    if row.mode != "train":
        return None
    x = torch.randn(row.T, row.N, row.I, requires_grad=True)
    state = [torch.randn(D, row.N, row.H, requires_grad=True)
             for _ in range(2 if row.cell == "LSTM" else 1)]
    hx = tuple(state) if row.cell == "LSTM" else state[0]
    dy = torch.randn(row.T, row.N, D * row.H)
    leaves = [x, *state, *rnn.parameters()]

    def step():
        for leaf in leaves:
            leaf.grad = None
        out, _ = rnn(x, hx)
        out.backward(dy)

    return step


def model_step(recurrent: str, seed: int = 0) -> Callable:
    """One optimizer step of the language model (``recurrent``: "rnngraph" or "torch")."""
    import torch
    from torch import nn

    import rnngraph.torch as rt

    torch.manual_seed(seed)
    V, E, H, T, N = (MODEL[k] for k in ("vocab", "embed", "hidden", "T", "N"))
    lstm = nn.LSTM(E, H)
    layers = nn.ModuleDict({"embed": nn.Embedding(V, E), "head": nn.Linear(H, V),
                            "lstm": rt.LSTM.from_torch(lstm) if recurrent == "rnngraph" else lstm})
    optimizer = torch.optim.SGD(layers.parameters(), lr=0.1)
    tokens = torch.randint(0, V, (T + 1, N))

    def step():
        optimizer.zero_grad()
        out, _ = layers["lstm"](layers["embed"](tokens[:-1]))
        loss = nn.functional.cross_entropy(layers["head"](out).reshape(-1, V),
                                           tokens[1:].reshape(-1))
        loss.backward()
        optimizer.step()

    return step
