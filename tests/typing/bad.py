"""Mistakes ``mypy --strict`` must report (tests/test_typing.py): each ``# E:`` comment holds
(part of) the error expected on its line, and no other line may have one."""

import rnngraph as rg

g = rg.Graph()
x = g.placeholder(shape=(5, 2, 3), name="x")
R = g.placeholder(shape=(16, 4), name="R")
h = g.LSTM(x, recurentWeight=R)  # E: Unexpected keyword argument "recurentWeight" for "LSTM"
rg.set_num_threads("2")  # E: Argument 1 to "set_num_threads" has incompatible type "str"; expected "int"
d = rg.LSTMDescriptor(training=1.5)  # E: Argument "training" to "LSTMDescriptor" has incompatible type "float"; expected "bool"
d.trainig = True  # E: "LSTMDescriptor" has no attribute "trainig"
