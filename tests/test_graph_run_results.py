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
