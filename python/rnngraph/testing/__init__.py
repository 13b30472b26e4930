"""Checks for users' own tests (pytest or any other runner): gradients of a Graph against
central differences, and a Graph's outputs against expected arrays.

``check_gradients(graph, of, with_, feeds)`` compares ``graph.gradients(of=of, with_=with_)``
(or gradients you wired yourself, ``analytic=``) with central differences of ``sum(of)`` in
float64, and raises ``AssertionError`` with a table when they disagree.
``assert_allclose`` and ``assert_outputs_close`` compare arrays and a Graph's outputs with
messages that name the tensor, the worst element and the tolerance.

>>> import numpy as np, rnngraph as rg, rnngraph.testing
>>> g = rg.Graph()
>>> x = g.placeholder((3, 2, 4), rg.float64, name="x")
>>> R = g.placeholder((9, 3), rg.float64, name="R")
>>> h, = g.GRU(x, recurrentWeight=R, inputWeight=np.full((9, 4), 0.1))
>>> loss = g.reductionSum(g.square(h), axes=[0, 1, 2])
>>> rng = np.random.default_rng(0)
>>> feeds = {x: rng.standard_normal((3, 2, 4)), R: 0.5 * rng.standard_normal((9, 3))}
>>> errors = rnngraph.testing.check_gradients(g, loss, [x, R], feeds)   # {x: ..., R: ...}

See docs/testing.md for a whole test file and what the numbers mean.
"""

from rnngraph.testing._arrays import assert_allclose, assert_outputs_close
from rnngraph.testing._gradients import check_gradients

__all__ = ["assert_allclose", "assert_outputs_close", "check_gradients"]
