"""The peers' steps for a row: PyTorch CPU (infer and train) and ONNX Runtime (infer).

Models, sessions and inputs are made here, outside timing. Thread counts are set by the
caller (torch.set_num_threads) or here (ORT session options), always to the row's count.
torch and onnx / onnxruntime are imported by the functions that use them, so a process that
measures one peer never loads the other's thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from rows import GATES, Row


def torch_step(row: Row, seed: int = 0, wrap: Callable | None = None) -> Callable | None:
    """nn.LSTM / nn.GRU / nn.RNN(tanh), in the row's dtype. infer: forward under
    inference_mode. train: forward + backward(dy) with grads of every parameter, the input and
    h0 (and c0). ``wrap(module)`` gives the module to time instead (the same weights in
    another implementation)."""
    import torch

    if not row.has_torch_twin:
        return None
    torch.manual_seed(seed)
    D = 2 if row.bidirectional else 1
    module = {"LSTM": torch.nn.LSTM, "GRU": torch.nn.GRU, "RNN": torch.nn.RNN}[row.cell]
    dtype = getattr(torch, row.dtype)
    rnn = module(row.I, row.H, bidirectional=row.bidirectional, dtype=dtype)
    if wrap is not None:
        rnn = wrap(rnn)
    train = row.mode == "train"
    x = torch.randn(row.T, row.N, row.I, requires_grad=train, dtype=dtype)
    state = [torch.randn(D, row.N, row.H, requires_grad=train, dtype=dtype)
             for _ in range(2 if row.cell == "LSTM" else 1)]
    hx = tuple(state) if row.cell == "LSTM" else state[0]
    if not train:
        rnn.eval()

        def step():
            with torch.inference_mode():
                return rnn(x, hx)

        return step

    dy = torch.randn(row.T, row.N, D * row.H, dtype=dtype)
    leaves = [x, *state, *rnn.parameters()]

    def step():
        for leaf in leaves:
            leaf.grad = None
        out, _ = rnn(x, hx)
        out.backward(dy)

    return step


def onnx_model(row: Row, seed: int = 0) -> Any:
    """An ONNX LSTM / GRU / RNN node (an onnx.ModelProto); weights as initializers; inputs X and
    initial state(s)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    G, D, H = GATES[row.cell], 2 if row.bidirectional else 1, row.H
    s = 1.0 / np.sqrt(H)

    def init(name, shape):
        return numpy_helper.from_array((s * rng.standard_normal(shape)).astype(np.float32), name)

    inits = [init("W", (D, G * H, row.I)), init("R", (D, G * H, H)), init("B", (D, 2 * G * H))]
    state_names = ["initial_h"] + (["initial_c"] if row.cell == "LSTM" else [])
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [row.T, row.N, row.I])]
    inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [D, row.N, H])
               for n in state_names]
    attrs = {"hidden_size": H, "direction": "bidirectional" if row.bidirectional else "forward"}
    if row.cell == "GRU":
        attrs["linear_before_reset"] = int(row.resetAfter)
    node = helper.make_node(row.cell, ["X", "W", "R", "B", "", *state_names], ["Y"], **attrs)
    out = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [row.T, D, row.N, H])
    graph = helper.make_graph([node], f"row{row.id}", inputs, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def ort_options(threads: int, spinning: bool = True) -> Any:
    """ONNX Runtime session options: ``threads`` intra-op threads, sequential, one inter-op;
    with ``spinning`` False, its workers block as soon as they run out of work."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return options


def ort_step(row: Row, threads: int, seed: int = 0, spinning: bool = True) -> Callable | None:
    """ONNX Runtime CPU session for an infer row (None for train rows); ``spinning``: as in
    ort_options."""
    import onnxruntime as ort

    if row.mode != "infer":
        return None
    session = ort.InferenceSession(onnx_model(row, seed).SerializeToString(),
                                   sess_options=ort_options(threads, spinning),
                                   providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(seed + 1)
    D = 2 if row.bidirectional else 1
    feeds = {i.name: rng.standard_normal([D, row.N, row.H] if i.name != "X" else
                                         [row.T, row.N, row.I]).astype(np.float32)
             for i in session.get_inputs()}

    def step():
        return session.run(["Y"], feeds)

    return step
