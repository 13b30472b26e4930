"""Where rnngraph's parallel sections run inside a PyTorch process: on torch's OpenMP threads
by default (rnngraph.torch.set_thread_pool), with results bit-identical to rnngraph's own
workers, and never on a pool a forked child did not inherit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import rnngraph
import rnngraph.torch as rgt


@pytest.fixture
def pool_restored():
    before = rgt.get_thread_pool()
    yield
    rgt.set_thread_pool(before)


def _train_step(seed: int = 0, backward: bool = True) -> list[torch.Tensor]:
    """Outputs and every gradient of a bidirectional LSTM step large enough to run in
    parallel (T 6, N 16, H 64); the outputs alone without ``backward``."""
    torch.manual_seed(seed)
    module = rgt.LSTM(32, 64, descriptor=rnngraph.LSTMDescriptor(bidirectional=True))
    x = torch.randn(6, 16, 32, requires_grad=True)
    out, (h, c) = module(x)
    if not backward:
        return [out.detach(), h.detach(), c.detach()]
    (out.square().sum() + h.sum() + c.sum()).backward()
    return [out.detach(), h.detach(), c.detach(), x.grad, *(p.grad for p in module.parameters())]


def test_torch_pool_is_the_default_where_torch_runs_openmp():
    assert "OpenMP" in torch.__config__.parallel_info()
    assert rgt.get_thread_pool() == "torch"
    assert "gomp" in rnngraph._native.core._host_openmp()


def test_both_pools_give_bit_identical_results(pool_restored):
    torch.set_num_threads(2)
    rgt.set_thread_pool("torch")
    on_torch = _train_step()
    rgt.set_thread_pool("rnngraph")
    assert rgt.get_thread_pool() == "rnngraph"
    on_rnngraph = _train_step()
    for a, b in zip(on_torch, on_rnngraph):
        assert torch.equal(a, b)


def test_an_unknown_pool_is_refused(pool_restored):
    with pytest.raises(ValueError, match="set_thread_pool: expected 'torch' or 'rnngraph'"):
        rgt.set_thread_pool("openmp")  # type: ignore[arg-type]


SCRIPT = textwrap.dedent("""
    import os, sys, torch
    import rnngraph.torch as rgt
    assert rgt.get_thread_pool() == "torch"   # the default on import
    torch.set_num_threads(2)
    sys.path.insert(0, {tests!r})
    from pytorch.test_torch_pool import _train_step
    # The parent runs a forward step on torch's OpenMP threads, not a backward: a PyTorch
    # built with CUDA refuses autograd in a child whose parent started autograd's device
    # threads. The parent's full step runs once the child has ended.
    _train_step(backward=False)
    pid = os.fork()
    if pid == 0:                    # a child has no OpenMP pool: rnngraph's own workers
        torch.save(_train_step(), {saved!r})
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("child exit", os.waitstatus_to_exitcode(status))
    child = torch.load({saved!r})
    print("equal", all(torch.equal(a, b) for a, b in zip(_train_step(), child)))
""")


def test_a_forked_child_computes_on_its_own_workers(tmp_path):
    tests = str(Path(__file__).resolve().parents[1])
    script = SCRIPT.format(tests=tests, saved=str(tmp_path / "child.pt"))
    result = subprocess.run([sys.executable, "-c", script],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "child exit 0" in result.stdout, result.stdout + result.stderr
    assert "equal True" in result.stdout, result.stdout + result.stderr


MANY_THREADS = textwrap.dedent("""
    import resource
    import numpy as np, torch, rnngraph as rg
    # Address space for about 2.3 GiB more (a few hundred 8 MiB stacks) than the imports
    # took: a PyTorch built with CUDA alone maps more than a fixed limit would allow.
    size = next(int(line.split()[1]) << 10 for line in open("/proc/self/status")
                if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + (2300 << 20), size + (2300 << 20)))
    import rnngraph.torch as rgt
    assert rgt.get_thread_pool() == "torch"
    T, N, I, H = 2, 8000, 8, 16
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, N, I)).astype(np.float32)
    R = rng.standard_normal((4 * H, H)).astype(np.float32)
    W = rng.standard_normal((4 * H, I)).astype(np.float32)
    def run(threads):
        rg.set_num_threads(threads)
        g = rg.Graph()
        out = g.LSTM(x, recurrentWeight=R, inputWeight=W)
        return g.run(targetTensors=out)[out[0]]
    one = run(1)
    print("equal", np.array_equal(run(600), one))
""")


def test_more_threads_than_the_host_can_start_run_on_rnngraphs_workers():
    """libgomp ends the process when it cannot start a thread ("Thread creation failed"):
    a team larger than the CPUs and torch's own team runs on rnngraph's workers, which start
    what they can and share the job among those."""
    environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}  # (the limit holds no BLAS pools)
    environment.pop("RNNGRAPH_TORCH_POOL", None)
    result = subprocess.run([sys.executable, "-c", MANY_THREADS], capture_output=True, text=True,
                            timeout=300, check=False, env=environment)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "equal True" in result.stdout, result.stdout + result.stderr[-2000:]


DENORMALS = textwrap.dedent("""
    import threading
    import torch
    import rnngraph.torch as rgt
    assert rgt.get_thread_pool() == "torch"
    torch.set_num_threads(2)

    def rnngraph_then_torch(report):
        # rnngraph's call is this thread's first parallel work: libgomp starts its team here
        with torch.no_grad():
            rgt.LSTM(48, 256)(torch.randn(7, 3, 48))
        x = torch.full((1_000_000,), 1e-40)  # a denormal float32
        report.append(int(((x * 1.0) != 0).sum()))

    seen = []
    rnngraph_then_torch(seen)
    worker = threading.Thread(target=rnngraph_then_torch, args=(seen,))
    worker.start()
    worker.join()
    print("kept", seen)
""")


def test_torch_threads_started_by_an_rnngraph_call_keep_denormals():
    """rnngraph flushes denormals to zero while it computes (FTZ/DAZ); threads that libgomp
    starts for rnngraph's first region on torch's pool must not inherit that: they flushed
    half of a later plain torch op's denormal results to zero."""
    result = subprocess.run([sys.executable, "-c", DENORMALS], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "kept [1000000, 1000000]" in result.stdout, result.stdout + result.stderr[-2000:]


@pytest.mark.parametrize(("value", "pool", "warned"), [
    ("rnngraph", "rnngraph", False), ("torch", "torch", False), ("omp", "torch", True)])
def test_the_environment_chooses_the_pool_and_a_bad_value_warns(value, pool, warned):
    """RNNGRAPH_TORCH_POOL picks the pool at import; a value that is neither choice is ignored
    with a RuntimeWarning, as a bad RNNGRAPH_NUM_THREADS is."""
    code = ("import warnings; warnings.simplefilter('always')\n"
            "import rnngraph.torch as rgt; print('pool', rgt.get_thread_pool())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True,
                            env={**os.environ, "RNNGRAPH_TORCH_POOL": value})
    assert f"pool {pool}" in result.stdout
    message = f"RuntimeWarning: RNNGRAPH_TORCH_POOL={value!r} is neither 'torch' nor 'rnngraph'"
    assert (message in result.stderr) == warned, result.stderr
