"""Training steps through rnngraph's PyTorch adapter (rnngraph.torch), for
bench_torch_adapter.py.

row_step: peers.torch_step's step (forward, then ``output.backward(dy)`` with gradients of
every parameter, the input and h0, and c0) with the row's torch.nn module converted to its
rnngraph.torch twin: same weights, same inputs. Rows without a torch twin (15, reset-before
GRU) are not measured.

model_step: a small language model (embedding, one recurrent layer, a linear head,
cross-entropy), so torch's own layers run between rnngraph's forward and backward calls;
``recurrent="torch"`` gives the same model with torch.nn.LSTM.
"""

from __future__ import annotations

from collections.abc import Callable

import peers
from rows import Row

MODEL = {"vocab": 2000, "embed": 256, "hidden": 512, "T": 35, "N": 16}  # a PTB-sized LM step


def row_step(row: Row, seed: int = 0) -> Callable | None:
    import rnngraph.torch as rt

    twins = {"LSTM": rt.LSTM, "GRU": rt.GRU, "RNN": rt.SingleGateRNN}
    if row.mode != "train":
        return None
    return peers.torch_step(row, seed, wrap=twins[row.cell].from_torch)


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
