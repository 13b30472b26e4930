"""What Graph.run returns belongs to the caller alone: no result shares memory with a feed,
and nothing a run touches can leave a forked child stuck."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

import rnngraph as rg


def test_a_placeholder_target_is_a_copy_of_its_feed():
    """Writing into a returned placeholder value leaves the caller's feed as it was."""
    g = rg.Graph()
    x = g.placeholder(shape=(2, 3), dataType=rg.float32, name="x")
    feed = np.zeros((2, 3), np.float32)
    result = g.run(feeds={x: feed}, targetTensors=[x])[x]
    assert not np.shares_memory(result, feed)
    result[0, 0] = 42
    assert feed[0, 0] == 0


def test_importing_rnngraph_loads_numpy_ma():
    """A run's first feed reads numpy.ma, which NumPy imports lazily: imported by rnngraph's
    import instead, no fork() can catch its import lock held by another thread."""
    code = "import sys, rnngraph; assert 'numpy.ma' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def _cannot_be_set_writeable(array: np.ndarray) -> bool:
    try:
        array.setflags(write=True)
    except ValueError:
        return True
    return False


def test_a_constant_target_cannot_be_written_into_the_graph():
    """A constant returned by run is read-only for good: setting it writeable fails, so no
    write can change the constant (and leave the packed weights an RNN made of it stale)."""
    g = rg.Graph()
    R = g.constant(np.eye(2, dtype=np.float32), name="R")
    x = g.placeholder(shape=(2, 1, 2), dataType=rg.float32, name="x")
    descriptor = rg.SingleGateRNNDescriptor(activation=rg.RNNActivation.none)
    h = g.singleGateRNN(x, recurrentWeight=R, descriptor=descriptor)[0]
    doubled = g.multiplication(R, 2.0)
    feeds = {x: np.ones((2, 1, 2), np.float32)}
    before = g.run(feeds=feeds, targetTensors=[h, doubled])
    returned = g.run(targetTensors=[R])[R]
    assert _cannot_be_set_writeable(returned)
    after = g.run(feeds=feeds, targetTensors=[h, doubled])
    np.testing.assert_array_equal(after[doubled], 2 * np.eye(2, dtype=np.float32))
    np.testing.assert_array_equal(after[h], before[h])


def test_an_optimizer_result_kept_by_its_variable_cannot_be_written_into_it():
    """An assign keeps the optimizer's array for its variable instead of a copy; the run
    returns that result read-only for good, so writing into it cannot change the variable."""
    g = rg.Graph()
    v = g.variable(np.ones(3, np.float32), shape=[3], dataType=rg.float32, name="v")
    step = g.stochasticGradientDescent(0.5, values=v, gradient=np.ones(3, np.float32))
    result = g.run(targetTensors=[step], targetOperations=[g.assign(v, step)])[step]
    np.testing.assert_array_equal(result, [0.5, 0.5, 0.5])
    assert _cannot_be_set_writeable(result)
    np.testing.assert_array_equal(g.run(targetTensors=[v])[v], [0.5, 0.5, 0.5])
