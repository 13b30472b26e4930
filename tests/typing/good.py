"""A user script that ``mypy --strict`` accepts (tests/test_typing.py): an LSTM graph with
placeholders and a descriptor, run, its gradients, a list operand, and rnngraph's threads."""

from typing import Any

import numpy as np

import rnngraph as rg

T, N, I, H = 5, 2, 3, 4
g = rg.Graph()
x = g.placeholder(shape=(None, N, I), dataType=rg.float32, name="x")
R = g.placeholder(shape=(4 * H, H), dataType=rg.float32, name="R")
W = g.placeholder(shape=(4 * H, I), dataType=rg.float32, name="W")
d = rg.LSTMDescriptor(training=True, activation=rg.RNNActivation.tanh)
d.forgetGateLast = False
h, c, z = g.LSTM(x, recurrentWeight=R, inputWeight=W, descriptor=d, name="lstm")
dy = g.constant(np.ones((T, N, H), np.float32))
dx, dR, dW = g.LSTMGradients(x, recurrentWeight=R, sourceGradient=dy, zState=z,
                             cellOutputFwd=c, inputWeight=W, descriptor=d)
grads: dict[rg.Tensor, rg.Tensor] = g.gradients(h, [R, W])
shifted = g.addition(h, [1.0, 2.0, 3.0, 4.0])  # numbers, lists and tuples are operands

rng = np.random.default_rng(0)
feeds = {x: rng.standard_normal((T, N, I)), R: 0.1 * rng.standard_normal((4 * H, H)),
         W: 0.1 * rng.standard_normal((4 * H, I))}
rg.set_num_threads(2)
out: dict[rg.Tensor, np.ndarray[Any, Any]] = g.run(feeds=feeds, targetTensors=[h, dR, grads[R]])
assert np.allclose(out[dR], out[grads[R]])
print(out[h].shape, rg.get_num_threads())
