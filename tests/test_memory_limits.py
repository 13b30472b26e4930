"""A call that needs more memory than the process can still get raises a MemoryError naming
the op, rather than being killed by the OOM killer (rnngraph/memory.hpp, allocate_block):
where the kernel overcommits, each of two 16 GiB outputs was granted on a 23 GiB machine, and
the process killed when they were written. The tests leave the process little memory with the
core's reserve (``_set_memory_reserve``), not by filling the machine's."""

from __future__ import annotations

import time

import numpy as np
import pytest

import rnngraph as rg
from rnngraph._native import core

MIB = 1 << 20


def _settled_available() -> int:
    """The memory available once the kernel's count has settled: memory just unmapped (the
    last test's, the last run's) shows up in MemAvailable over the next few hundred ms, and
    it moved by 270 MiB between two checks of one call here (2-core EPYC)."""
    last = core._available_memory()
    for _ in range(30):
        time.sleep(0.1)
        now = core._available_memory()
        if abs(now - last) < 8 * MIB:
            return now
        last = now
    return last


@pytest.fixture
def leave():
    """leave(n): the process may get about n bytes more; the reserve is undone afterwards."""
    def set_left(n: int) -> None:
        core._set_memory_reserve(0)
        core._set_memory_reserve(max(0, _settled_available() - n))

    rg.release_memory()  # kept blocks would be reused without a check
    yield set_left
    core._set_memory_reserve(0)
    rg.release_memory()


def test_available_memory_is_known_and_within_the_machines():
    with open("/proc/meminfo") as meminfo:
        fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in meminfo}
    available = core._available_memory()
    assert 0 < available <= fields["MemTotal"] + fields["SwapTotal"]


def _two_big_outputs(T: int = 512, N: int = 16384, H: int = 16):
    """A training singleGateRNN whose h and zState are 512 MiB each (T·N·H float32s), fed a
    broadcast source (its dense copy: 32 MiB). Blocks this large, as MemAvailable moved by
    up to 100 MiB from one reading to the next while 200 MiB were faulted in here."""
    g = rg.Graph()
    x = g.placeholder((None, None, 1), rg.float32, name="x")
    h, z = g.singleGateRNN(x, recurrentWeight=np.full((H, H), 1e-3, np.float32),
                           inputWeight=np.ones((H, 1), np.float32),
                           descriptor=rg.SingleGateRNNDescriptor(training=True))
    feed = np.broadcast_to(np.float32(0.5), (T, N, 1))
    return lambda: g.run(feeds={x: feed}, targetTensors=[h, z])


def test_outputs_that_fit_one_by_one_but_not_together_raise_a_memory_error(leave):
    run = _two_big_outputs()
    leave(768 * MIB)  # room for one 512 MiB output, not two: the first is faulted in at once
    with pytest.raises(MemoryError, match=r"^singleGateRNN.*out of memory: could not allocate "
                       r"\d+ bytes \(\d+ MiB\), more than the \d+ MiB this process can still get"):
        run()
    leave(3072 * MIB)  # room for both and the workspace: the same call runs
    finite = all(np.isfinite(r).all() for r in run().values())  # (its outputs freed at once)
    assert finite


def test_a_dense_copy_larger_than_what_is_left_raises_a_memory_error(leave):
    """A broadcast feed made dense for the op: 512 MiB with 100 MiB left."""
    g = rg.Graph()
    x = g.placeholder((None, None, 64), rg.float32)
    h, = g.singleGateRNN(x, recurrentWeight=np.zeros((8, 8), np.float32),
                         inputWeight=np.zeros((8, 64), np.float32))
    feed = np.broadcast_to(np.float32(1), (2048, 1024, 64))
    leave(100 * MIB)
    with pytest.raises(MemoryError, match=r"^singleGateRNN.*source.*needs 536870912 bytes "
                       r"\(512 MiB\), more than the \d+ MiB this process can still get$"):
        g.run(feeds={x: feed}, targetTensors=[h])


@pytest.mark.parametrize(("cgroup_file", "files", "left"), [
    # cgroup v2: the process's cgroup and its ancestors, the least left counting
    ("0::/user.slice/job\n", {"memory.max": "max\n", "memory.current": "5000\n",
                              "user.slice/memory.max": "4000\n",
                              "user.slice/memory.current": "1000\n",
                              "user.slice/job/memory.max": "max\n",
                              "user.slice/job/memory.current": "500\n"}, 3000),
    ("0::/\n", {"memory.max": "8192\n", "memory.current": "10000\n"}, 0),  # over: none left
    ("0::/a\n", {"a/memory.max": "max\n", "a/memory.current": "1\n"}, -1),
    # cgroup v1: "no limit" is a page-rounded 2**63 - 1
    ("4:memory:/x\n", {"memory/x/memory.limit_in_bytes": "1048576\n",
                       "memory/x/memory.usage_in_bytes": "4096\n"}, 1044480),
    ("4:memory:/x\n", {"memory/x/memory.limit_in_bytes": "9223372036854771712\n",
                       "memory/x/memory.usage_in_bytes": "4096\n"}, -1),
    # a path that is not there (a container that sees its own cgroup at the mount root)
    ("4:memory:/docker/abc\n", {"memory/memory.limit_in_bytes": "2048\n",
                                "memory/memory.usage_in_bytes": "1024\n"}, 1024),
    ("4:cpu:/x\n", {"memory/x/memory.limit_in_bytes": "2048\n",
                    "memory/x/memory.usage_in_bytes": "1024\n"}, -1),  # no memory controller
], ids=["v2-parent", "v2-over", "v2-none", "v1-own", "v1-unlimited", "v1-root", "v1-no-memory"])
def test_the_cgroup_memory_limit_is_the_processs_own_cgroups(tmp_path, cgroup_file, files, left):
    for relative, content in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    assert core._cgroup_memory_left(cgroup_file, str(tmp_path)) == left
