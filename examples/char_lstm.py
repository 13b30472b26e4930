"""A character-level LSTM language model whose whole training step lives in one rnngraph.Graph:
variables, gather as the embedding, the LSTM, a matmul head, softMaxCrossEntropy, gradients
and Adam applied with assign. Used by notebooks/02_training.ipynb, the model test
(tests/graph_ops/test_training_model.py) and benchmarks/bench_training_step.py.

    model = CharLSTM(Sizes(vocab=V, embed=E, hidden=H, T=T, N=N), seed=0)
    loss = model.train_step(inputs, targets)   # int arrays [T, N]; one Adam step
    text = model.sample(codec, "The ", 200)    # generation, one character at a time

The same model in PyTorch (torch_twin) shares the initial weights, for the gradient check
and the time comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import rnngraph as rg

TEXT = Path(__file__).resolve().parent / "data" / "tiny_corpus.txt"
PARAMETERS = ("embedding", "inputWeight", "recurrentWeight", "bias", "headWeight", "headBias")


@dataclass(frozen=True)
class Sizes:
    vocab: int  # V, characters
    embed: int  # E
    hidden: int  # H
    T: int  # time steps per batch
    N: int  # sequences per batch


class Codec:
    """Characters <-> int32 codes over a text's alphabet."""

    def __init__(self, text: str) -> None:
        self.alphabet = sorted(set(text))
        self.code = {ch: i for i, ch in enumerate(self.alphabet)}

    def encode(self, text: str) -> np.ndarray:
        return np.array([self.code[ch] for ch in text], np.int32)

    def decode(self, codes: Any) -> str:
        return "".join(self.alphabet[int(i)] for i in codes)


def batches(codes: np.ndarray, sizes: Sizes, rng: np.random.Generator):
    """Endless (inputs, targets) pairs, each int32 [T, N]: N random windows of the text,
    targets one character ahead."""
    while True:
        starts = rng.integers(0, len(codes) - sizes.T - 1, sizes.N)
        windows = np.stack([codes[s:s + sizes.T + 1] for s in starts], axis=1)
        yield windows[:-1], windows[1:]


def initial_parameters(sizes: Sizes, seed: int, dtype: Any = np.float32) -> dict[str, np.ndarray]:
    """Uniform ±1/√H (as torch.nn.LSTM), the embedding N(0, 1), in SPEC.md layouts."""
    rng = np.random.default_rng(seed)
    V, E, H = sizes.vocab, sizes.embed, sizes.hidden
    bound = 1 / np.sqrt(H)

    def uniform(*shape: int) -> np.ndarray:
        return rng.uniform(-bound, bound, shape).astype(dtype)

    return {"embedding": rng.standard_normal((V, E)).astype(dtype),
            "inputWeight": uniform(4 * H, E), "recurrentWeight": uniform(4 * H, H),
            "bias": uniform(4 * H), "headWeight": uniform(H, V), "headBias": uniform(V)}


class CharLSTM:
    """The model and its training step in one Graph (see the module docstring)."""

    def __init__(self, sizes: Sizes, seed: int = 0, dataType: rg.DataType = rg.float32,
                 learningRate: float = 3e-3, parameters: dict[str, np.ndarray] | None = None) -> None:
        self.sizes = sizes
        g = self.graph = rg.Graph()
        V, T, N = sizes.vocab, sizes.T, sizes.N
        values = parameters or initial_parameters(sizes, seed, dataType.numpy)
        self.variables = {k: g.variable(values[k], shape=values[k].shape, dataType=dataType, name=k)
                          for k in PARAMETERS}
        self.inputs = g.placeholder((T, N), rg.int32, name="inputs")
        self.targets = g.placeholder((T, N), rg.int32, name="targets")
        logits, _ = self._forward(self.inputs, T, N)
        labels = g.oneHot(g.reshape(self.targets, shape=[T * N]), depth=V)
        self.loss = g.softMaxCrossEntropy(logits, labels=g.cast(labels, to=dataType), axis=1,
                                          reuctionType=rg.LossReductionType.mean, name="loss")
        self.gradients = g.gradients(of=self.loss, with_=list(self.variables.values()))
        self.updates = self._adam(learningRate, dataType)
        self._sampler: dict[str, rg.Tensor] | None = None

    def _forward(self, tokens: rg.Tensor, T: int, N: int,
                 state: dict | None = None) -> tuple[rg.Tensor, list[rg.Tensor]]:
        """Logits [T·N, V] for int32 tokens [T, N], and the LSTM's outputs (h, and c when an
        initial ``state`` is given, for generation)."""
        g, v, H = self.graph, self.variables, self.sizes.hidden
        x = g.gather(v["embedding"], indicesTensor=tokens, axis=0, batchDimensions=0)
        outputs = g.LSTM(x, recurrentWeight=v["recurrentWeight"], inputWeight=v["inputWeight"],
                         bias=v["bias"], **(state or {}),
                         descriptor=rg.LSTMDescriptor(produceCell=state is not None))
        flat = g.reshape(outputs[0], shape=[T * N, H])
        logits = g.addition(g.matrixMultiplication(primary=flat, secondary=v["headWeight"]),
                            v["headBias"])
        return logits, outputs

    def _adam(self, learningRate: float, dataType: rg.DataType) -> list:
        """One Adam step for every parameter (Apple's update rule), as assign operations;
        beta1^t and beta2^t live in variables, advanced by the same run."""
        g, beta1, beta2 = self.graph, 0.9, 0.999
        powers = [g.variable(b, shape=[], dataType=dataType, name=f"beta{i}Power")
                  for i, b in ((1, beta1), (2, beta2))]
        updates = [g.assign(p, tensor=g.multiplication(p, b)) for p, b in zip(powers, (beta1, beta2))]
        for name, variable in self.variables.items():
            zeros = np.zeros(variable.shape)
            momentum = g.variable(zeros, shape=variable.shape, dataType=dataType, name=f"{name}/m")
            velocity = g.variable(zeros, shape=variable.shape, dataType=dataType, name=f"{name}/v")
            new, m, vel = g.adam(learningRate=learningRate, beta1=beta1, beta2=beta2, epsilon=1e-8,
                                 beta1Power=powers[0], beta2Power=powers[1], values=variable,
                                 momentum=momentum, velocity=velocity,
                                 gradient=self.gradients[variable])
            updates += [g.assign(variable, tensor=new), g.assign(momentum, tensor=m),
                        g.assign(velocity, tensor=vel)]
        return updates

    def feeds(self, inputs: np.ndarray, targets: np.ndarray) -> dict:
        return {self.inputs: inputs, self.targets: targets}

    def train_step(self, inputs: np.ndarray, targets: np.ndarray) -> float:
        """One Adam step on a batch; returns the batch's loss before the step."""
        out = self.graph.run(feeds=self.feeds(inputs, targets), targetTensors=[self.loss],
                             targetOperations=self.updates)
        return float(out[self.loss])

    def loss_and_gradients(self, inputs: np.ndarray, targets: np.ndarray) -> tuple[float, dict]:
        """The loss and d(loss)/d(parameter) by name, without a step."""
        wanted = [self.loss, *(self.gradients[v] for v in self.variables.values())]
        out = self.graph.run(feeds=self.feeds(inputs, targets), targetTensors=wanted)
        return float(out[self.loss]), {k: out[self.gradients[v]] for k, v in self.variables.items()}

    def load(self, parameters: dict[str, np.ndarray]) -> None:
        """Set the parameters (by name) through assign operations fed by placeholders."""
        g = self.graph
        if not hasattr(self, "_loaders"):
            self._loaders = {k: g.placeholder(v.shape, v.dataType, name=f"load/{k}")
                             for k, v in self.variables.items()}
            self._loads = [g.assign(v, tensor=self._loaders[k]) for k, v in self.variables.items()]
        g.run(feeds={self._loaders[k]: parameters[k] for k in self.variables},
              targetOperations=self._loads)

    def parameters(self) -> dict[str, np.ndarray]:
        out = self.graph.run(targetTensors=list(self.variables.values()))
        return {k: out[v] for k, v in self.variables.items()}

    def sample(self, codec: Codec, prompt: str, length: int, seed: int = 0,
               temperature: float = 0.8) -> str:
        """``prompt`` continued by ``length`` characters drawn one at a time from the model."""
        g, H = self.graph, self.sizes.hidden
        dtype = self.variables["bias"].dataType
        if self._sampler is None:
            token = g.placeholder((1, 1), rg.int32, name="token")
            state = {k: g.placeholder((1, H), dtype, name=k) for k in ("initState", "initCell")}
            logits, (h, c) = self._forward(token, 1, 1, state)
            last = {"initState": g.reshape(h, shape=[1, H]), "initCell": g.reshape(c, shape=[1, H])}
            self._sampler = {"token": token, **state, "logits": logits, **{f"next/{k}": t for k, t in last.items()}}
        s, rng = self._sampler, np.random.default_rng(seed)
        values = {k: np.zeros((1, H), dtype.numpy) for k in ("initState", "initCell")}
        text, codes = prompt, list(codec.encode(prompt))
        for i in range(len(codes) + length - 1):
            feeds = {s["token"]: np.array([[codes[i]]], np.int32),
                     **{s[k]: values[k] for k in values}}
            out = g.run(feeds=feeds, targetTensors=[s["logits"], s["next/initState"], s["next/initCell"]])
            values = {k: out[s[f"next/{k}"]] for k in values}
            if i + 1 < len(codes):
                continue
            z = out[s["logits"]][0].astype(np.float64) / temperature
            p = np.exp(z - z.max())
            codes.append(int(rng.choice(len(p), p=p / p.sum())))
            text += codec.alphabet[codes[-1]]
        return text


def torch_twin(sizes: Sizes, parameters: dict[str, np.ndarray]) -> Any:
    """The same model in PyTorch: nn.Embedding, nn.LSTM (gates i, f, g, o as rnngraph's
    i, f, z, o; bias in b_ih, b_hh = 0), nn.Linear, cross-entropy with mean reduction."""
    import torch
    from torch import nn

    dtype = torch.float64 if parameters["bias"].dtype == np.float64 else torch.float32
    V, E, H = sizes.vocab, sizes.embed, sizes.hidden
    model = nn.ModuleDict({"embedding": nn.Embedding(V, E), "lstm": nn.LSTM(E, H),
                           "head": nn.Linear(H, V)}).to(dtype)
    p = {k: torch.from_numpy(np.array(v)) for k, v in parameters.items()}
    with torch.no_grad():
        model["embedding"].weight.copy_(p["embedding"])
        model["lstm"].weight_ih_l0.copy_(p["inputWeight"])
        model["lstm"].weight_hh_l0.copy_(p["recurrentWeight"])
        model["lstm"].bias_ih_l0.copy_(p["bias"])
        model["lstm"].bias_hh_l0.zero_()
        model["head"].weight.copy_(p["headWeight"].T)
        model["head"].bias.copy_(p["headBias"])
    return model


def torch_loss(model: Any, inputs: np.ndarray, targets: np.ndarray) -> Any:
    import torch

    tokens = torch.from_numpy(inputs.astype(np.int64))
    out, _ = model["lstm"](model["embedding"](tokens))
    logits = model["head"](out.reshape(-1, out.shape[-1]))
    return torch.nn.functional.cross_entropy(logits, torch.from_numpy(targets.astype(np.int64)).reshape(-1))


def torch_gradients(model: Any) -> dict[str, np.ndarray]:
    """The twin's gradients by rnngraph's parameter names and layouts."""
    lstm = model["lstm"]
    return {"embedding": model["embedding"].weight.grad.numpy(),
            "inputWeight": lstm.weight_ih_l0.grad.numpy(),
            "recurrentWeight": lstm.weight_hh_l0.grad.numpy(),
            "bias": lstm.bias_ih_l0.grad.numpy(),
            "headWeight": model["head"].weight.grad.numpy().T,
            "headBias": model["head"].bias.grad.numpy()}
