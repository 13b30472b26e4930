"""rnngraph's parallel runtime: results that do not depend on load or on concurrent callers,
threads that sleep when idle, a default thread count from the CPUs the process may use, and
threadpoolctl's view and limits of rnngraph's pool. (Speed is measured in benchmarks/.)"""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import threadpoolctl

import rnngraph as rg
from toolkit import blas_threads

# An LSTM training step: T steps, batch N (N = 3: the threads share each step; N = 32: row
# chunks), every gradient a target.
SHAPES = [(7, 3, 48, 256), (5, 32, 40, 64)]


def training_graph(T, N, I, H, seed=0):
    rng = np.random.default_rng(seed)
    g = rg.Graph()
    names = {"x": (T, N, I), "R": (4 * H, H), "W": (4 * H, I), "dy": (T, N, H)}
    ph = {k: g.placeholder(shape=s, dataType=rg.float32, name=k) for k, s in names.items()}
    d = rg.LSTMDescriptor(training=True)
    h, c, z = g.LSTM(ph["x"], recurrentWeight=ph["R"], inputWeight=ph["W"], descriptor=d)
    grads = g.LSTMGradients(ph["x"], recurrentWeight=ph["R"], sourceGradient=ph["dy"], zState=z,
                            cellOutputFwd=c, inputWeight=ph["W"], descriptor=d)
    feeds = {ph[k]: (0.3 * rng.standard_normal(s)).astype(np.float32) for k, s in names.items()}
    return g, feeds, [h, *grads]


def run(graph, feeds, targets):
    out = graph.run(feeds, targetTensors=targets)
    return [out[t] for t in targets]


def assert_same_bits(a, b, what):
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b)):
        assert np.array_equal(x, y), f"{what}: result {i} differs"


@pytest.fixture
def busy_processes():
    """Two processes that keep a core each busy while the test runs."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_these_tests_run_on_rnngraphs_own_workers():
    """Not on a host's OpenMP pool (tests/pytorch hands it back when it is done)."""
    from rnngraph._native import core

    assert core._host_openmp() == ""


@pytest.mark.parametrize("shape", SHAPES, ids=["team", "rows"])
def test_results_are_identical_under_load(shape, busy_processes):
    g, feeds, targets = training_graph(*shape)
    with blas_threads(1):
        expected = run(g, feeds, targets)
    with blas_threads(3):
        for _ in range(20):
            assert_same_bits(run(g, feeds, targets), expected, "3 threads, 2 busy processes")


@pytest.mark.parametrize("one_graph", [True, False], ids=["one-graph", "graph-each"])
def test_concurrent_calls_from_four_threads_match_sequential_calls(one_graph):
    graphs = [training_graph(*SHAPES[i % 2], seed=i) for i in range(4)]
    if one_graph:
        graphs = [graphs[0]] * 4
    expected = [run(*graph) for graph in graphs]
    results, errors = [None] * 4, []

    def worker(i):
        try:
            for _ in range(10):
                out = run(*graphs[i])
                assert_same_bits(out, expected[i], f"thread {i}")
            results[i] = out
        except Exception as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    with blas_threads(2):
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert not errors, errors
    assert all(r is not None for r in results)


def child(code, **env):
    """Run ``code`` in a fresh Python; its stdout."""
    environment = {k: v for k, v in os.environ.items() if k != "RNNGRAPH_NUM_THREADS"} | env
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=environment, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_idle_threads_use_no_cpu_a_second_after_the_last_call():
    out = child("""
        import os, time
        import numpy as np
        import rnngraph as rg
        rg.set_num_threads(4)
        g = rg.Graph()
        x = g.placeholder(shape=(20, 2, 1024), dataType=rg.float32, name="x")
        R = g.placeholder(shape=(1024, 256), dataType=rg.float32, name="R")
        h, = g.LSTM(x, recurrentWeight=R, descriptor=rg.LSTMDescriptor())[:1]
        feeds = {x: np.ones((20, 2, 1024), np.float32), R: np.full((1024, 256), 0.01, np.float32)}
        for _ in range(50):
            g.run(feeds, targetTensors=[h])
        me = str(os.getpid())

        def busy_ticks():  # CPU ticks of every thread but this one
            total = 0
            for tid in os.listdir("/proc/self/task"):
                if tid == me:
                    continue
                with open(f"/proc/self/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
            return total, len(os.listdir("/proc/self/task"))

        time.sleep(1.0)
        before, threads = busy_ticks()
        time.sleep(1.0)
        after, _ = busy_ticks()
        print(after - before, threads)
    """)
    ticks, threads = map(int, out.split())
    assert threads >= 4, "the workers were never started"
    assert ticks <= 1, f"rnngraph's idle threads used {ticks} ticks of CPU in a second"


def test_a_call_after_a_pause_wakes_every_sleeping_worker_it_needs():
    """Each of the team's workers, asleep after a pause, runs again in the next call, pause
    after pause (an offer marks the sleepers it chooses awake: one it then failed to wake would
    sleep for good, never chosen again)."""
    out = child("""
        import os, time
        import numpy as np
        import rnngraph as rg
        rng = np.random.default_rng(0)
        g = rg.Graph()  # N = 1, H = 512: a team of 6 shares each step (work_split.hpp)
        x = g.placeholder(shape=(25, 1, 2048), dataType=rg.float32, name="x")  # x·Wᵀ given
        R = g.placeholder(shape=(2048, 512), dataType=rg.float32, name="R")
        h = g.LSTM(x, recurrentWeight=R, descriptor=rg.LSTMDescriptor())[0]
        feeds = {x: rng.standard_normal((25, 1, 2048), np.float32),
                 R: 0.05 * rng.standard_normal((2048, 512), np.float32)}
        rg.set_num_threads(1)
        for _ in range(3):  # starts whatever else a call starts (the memory releaser)
            g.run(feeds, targetTensors=[h])
        before = set(os.listdir("/proc/self/task"))
        rg.set_num_threads(6)
        g.run(feeds, targetTensors=[h])
        workers = set(os.listdir("/proc/self/task")) - before

        def ran_ns():
            out = {}
            for tid in workers:
                with open(f"/proc/self/task/{tid}/schedstat") as f:
                    out[tid] = int(f.read().split()[0])
            return out

        woken = []
        for _ in range(5):
            time.sleep(0.05)  # far past the workers' watch (kWorkerSpinUs): they sleep
            start = ran_ns()
            g.run(feeds, targetTensors=[h])
            time.sleep(0.02)  # a worker woken as the call ended has run by now
            end = ran_ns()
            woken.append(sum(end[t] > start[t] for t in workers))
        print(len(workers), min(woken))
    """)
    workers, fewest_woken = map(int, out.split())
    assert workers == 5
    assert fewest_woken == 5, f"a call after a pause woke only {fewest_woken} of 5 workers"


MAKING_WAY = """
    import os, subprocess, sys, time
    cpus = sorted(os.sched_getaffinity(0))[:{cpus}]
    os.sched_setaffinity(0, cpus)  # before any worker starts: theirs is this mask too
    # Busy processes that end with this one even if it is killed (PR_SET_PDEATHSIG).
    spin = "import ctypes, signal\\nctypes.CDLL(None).prctl(1, signal.SIGKILL)\\nwhile True: pass"
    busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range({busy})]
    try:
        import numpy as np
        import rnngraph as rg
        from rnngraph._native import core
        rng = np.random.default_rng(0)
        g = rg.Graph()  # row 4 of BENCHMARKS.md (T = 25): the threads share each step's product
        x = g.placeholder(shape=({T}, 1, 512), dataType=rg.float32, name="x")
        R = g.placeholder(shape=(2048, 512), dataType=rg.float32, name="R")
        W = g.placeholder(shape=(2048, 512), dataType=rg.float32, name="W")
        h = g.LSTM(x, recurrentWeight=R, inputWeight=W, descriptor=rg.LSTMDescriptor())[0]
        feeds = {{x: rng.standard_normal(({T}, 1, 512), np.float32),
                  R: 0.05 * rng.standard_normal((2048, 512), np.float32),
                  W: 0.05 * rng.standard_normal((2048, 512), np.float32)}}
        rg.set_num_threads(1)
        expected = g.run(feeds, targetTensors=[h])[h]
        rg.set_num_threads({threads})
        start = time.monotonic()
        calls = 0
        while time.monotonic() - start < {seconds} and core.{counted}() < {enough}:
            assert np.array_equal(g.run(feeds, targetTensors=[h])[h], expected)
            calls += 1
    finally:
        for p in busy:
            p.kill()
            p.wait()
    masks = {{os.sched_getaffinity(int(t)) == set(cpus) for t in os.listdir("/proc/self/task")}}
    print(core._worker_moves(), core._worker_pulls(), calls, masks == {{True}},
          len(os.listdir("/proc/self/task")))
"""


def making_way(cpus, busy, threads, seconds, enough, T=25, counted="_worker_moves"):
    """MAKING_WAY's printout: moves, pulls, calls, whether every mask is as it was, threads."""
    out = child(MAKING_WAY.format(cpus=cpus, busy=busy, threads=threads, seconds=seconds,
                                  enough=enough, T=T, counted=counted))
    moves, pulls, calls, masks_kept, count = out.split()
    return int(moves), int(pulls), int(calls), masks_kept == "True", int(count)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_worker_beside_a_descheduled_caller_moves_and_keeps_its_mask():
    """Two CPUs, the caller, a worker and a busy process: the scheduler puts the caller and its
    worker on one core again and again, and the worker moves off (runtime/core_moves.hpp).
    Every result is the one-thread result's bits, and every thread ends with the mask it had."""
    moves, _, calls, masks_kept, threads = making_way(cpus=2, busy=1, threads=2, seconds=60,
                                                      enough=5)
    assert moves >= 5, f"fewer than 5 worker moves in {calls} calls"
    assert masks_kept, "a thread's affinity mask was left narrowed"
    assert threads >= 2


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_a_waiter_pulls_a_descheduled_worker_and_the_worker_keeps_its_mask():
    """Two CPUs, the caller, a worker and a busy process, calls long enough for pulls (200
    steps): when the worker holding a step's last items sits descheduled on the other core, the
    waiting caller pulls it onto its own (runtime/job.cpp, pull_holder). Every result is the
    one-thread result's bits, and every thread ends with the mask it had."""
    _, pulls, calls, masks_kept, threads = making_way(cpus=2, busy=1, threads=2, seconds=60,
                                                      enough=3, T=200, counted="_worker_pulls")
    assert pulls >= 3, f"fewer than 3 pulls in {calls} calls"
    assert masks_kept, "a pulled worker's affinity mask was left narrowed"
    assert threads >= 2


def test_a_worker_with_no_other_core_yields_and_finishes():
    """One CPU for a team of three beside a busy process: the threads wait beside each other
    all the time, and a worker has no other core to move to, so it yields (the path where a
    move is refused). Every call finishes with the one-thread result, and no mask changes."""
    moves, pulls, calls, masks_kept, threads = making_way(cpus=1, busy=1, threads=3, seconds=3,
                                                          enough=1)
    assert moves == 0 and pulls == 0 and calls > 0 and masks_kept
    assert threads >= 3


def test_the_default_thread_count_is_the_cpus_this_process_may_use():
    code = """
        import os
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        import rnngraph as rg
        print(rg.get_num_threads(), rg.cpu_budget()["affinity"])
    """
    assert child(code).split() == ["1", "1"]
    assert child(code, RNNGRAPH_NUM_THREADS="3").split() == ["3", "1"]
    assert child(code, RNNGRAPH_NUM_THREADS=" 3 ").split() == ["3", "1"]  # (spaces around it)


@pytest.mark.parametrize("value", ["abc", "0", "-2", "2.5", "4097", "", " ", "2 x"])
def test_an_invalid_thread_variable_is_ignored_with_a_warning(value):
    code = """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import rnngraph as rg
        print(rg.get_num_threads(), rg.cpu_budget()["default"])
        print("|".join(str(w.message) for w in caught if w.category is RuntimeWarning))
    """
    threads, message = child(code, RNNGRAPH_NUM_THREADS=value).split("\n", 1)
    count, default = threads.split()
    assert count == default  # the CPUs this process may use
    assert f"RNNGRAPH_NUM_THREADS={value!r}" in message and "ignored" in message
    assert child(code, RNNGRAPH_NUM_THREADS="2").split("\n")[1] == ""  # a valid one: silent
    assert child("import rnngraph as rg; print(rg.get_num_threads())").strip() == str(
        len(os.sched_getaffinity(0)) if not rg.cpu_budget()["quota"] else rg.cpu_budget()["default"])


def test_threadpoolctl_sees_and_limits_rnngraphs_pool():
    rg.set_num_threads(3)
    try:
        pools = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "rnngraph"]
        assert len(pools) == 1 and pools[0]["num_threads"] == 3
        with threadpoolctl.threadpool_limits(1):
            assert rg.get_num_threads() == 1
        assert rg.get_num_threads() == 3
        with threadpoolctl.threadpool_limits(limits={"rnngraph": 2}):
            assert rg.get_num_threads() == 2
        assert rg.get_num_threads() == 3
        # A limit past the core's C int is no limit (not wrapped by ctypes: 2**40 to 0, 1)
        for huge in (2**32 + 1, 2**40):
            with threadpoolctl.threadpool_limits(huge):
                assert rg.get_num_threads() == rg.config.MAX_THREADS
            assert rg.get_num_threads() == 3
    finally:
        rg.set_num_threads(rg.cpu_budget()["default"])


def test_a_blas_limit_from_another_thread_reaches_no_product():
    """threadpoolctl lists rnngraph's private OpenBLAS as a "blas" pool, and a limit entered
    in another thread (a data loader limiting NumPy's BLAS, say) sets it to n threads. Each of
    rnngraph's BLAS calls sets it back to one first, so results keep their bits. (A limit
    that lands between that check and the BLAS reading its count, about 100 ns, would still
    reach one call: at most one of the 20 may differ; before the check, 11 of 20 did.)"""
    T, N, I, H = 10, 33, 64, 256
    rng = np.random.default_rng(0)
    g = rg.Graph()
    x, R, W, dy = (g.placeholder(shape=shape, dataType=rg.float32)
                   for shape in ((T, N, I), (4 * H, H), (4 * H, I), (T, N, H)))
    descriptor = rg.LSTMDescriptor(training=True)
    _, c, z = g.LSTM(x, recurrentWeight=R, inputWeight=W, descriptor=descriptor)
    grads = g.LSTMGradients(x, recurrentWeight=R, inputWeight=W, sourceGradient=dy, zState=z,
                            cellOutputFwd=c, descriptor=descriptor)
    feeds = {t: (0.3 * rng.standard_normal(t.shape)).astype(np.float32) for t in (x, R, W, dy)}
    expected = g.run(feeds=feeds, targetTensors=grads)
    stop = threading.Event()

    def limit_the_blas_again_and_again():
        while not stop.is_set():
            with threadpoolctl.threadpool_limits(2, user_api="blas"):
                stop.wait(0.001)

    limiter = threading.Thread(target=limit_the_blas_again_and_again)
    limiter.start()
    try:
        runs = [g.run(feeds=feeds, targetTensors=grads) for _ in range(20)]
    finally:
        stop.set()
        limiter.join()
    differing = sum(any(not np.array_equal(run[t], expected[t]) for t in grads) for run in runs)
    assert differing <= 1, f"{differing} of 20 calls gave other bits"


def _cgroup_tree(root, files):
    """A fake cgroup file system under ``root``: {relative path: content}."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return str(root)


@pytest.mark.parametrize(("cgroup_file", "files", "quota"), [
    # cgroup v2: the process's own cgroup and its ancestors, the lowest quota counting
    ("0::/user.slice/job\n", {"cpu.max": "max 100000\n",
                              "user.slice/cpu.max": "300000 100000\n",
                              "user.slice/job/cpu.max": "50000 100000\n"}, 0.5),
    ("0::/user.slice/job\n", {"user.slice/cpu.max": "150000 100000\n",
                              "user.slice/job/cpu.max": "max 100000\n"}, 1.5),
    ("0::/\n", {"cpu.max": "200000 100000\n"}, 2.0),  # a container's own cgroup at the root
    ("0::/a\n", {"cpu.max": "max 100000\n", "a/cpu.max": "max 100000\n"}, 0.0),
    # cgroup v1, under cpu or cpu,cpuacct
    ("4:cpu,cpuacct:/x\n3:memory:/x\n", {"cpu,cpuacct/x/cpu.cfs_quota_us": "50000\n",
                                         "cpu,cpuacct/x/cpu.cfs_period_us": "100000\n"}, 0.5),
    ("4:cpuacct,cpu:/x/y\n", {"cpu/x/cpu.cfs_quota_us": "250000\n",
                              "cpu/x/cpu.cfs_period_us": "100000\n",
                              "cpu/x/y/cpu.cfs_quota_us": "-1\n",
                              "cpu/x/y/cpu.cfs_period_us": "100000\n"}, 2.5),
    # a path that is not there (a container that sees its own cgroup at the mount root)
    ("4:cpu:/docker/abc\n", {"cpu/cpu.cfs_quota_us": "100000\n",
                             "cpu/cpu.cfs_period_us": "100000\n"}, 1.0),
    ("4:memory:/x\n", {"cpu/x/cpu.cfs_quota_us": "100000\n",
                       "cpu/x/cpu.cfs_period_us": "100000\n"}, 0.0),  # no cpu controller
], ids=["v2-own", "v2-parent", "v2-root", "v2-none", "v1-cpu,cpuacct", "v1-parent",
        "v1-root", "v1-no-cpu"])
def test_the_cgroup_quota_is_the_processs_own_cgroups(tmp_path, cgroup_file, files, quota):
    """systemd-run -p CPUQuota=, a container without its own cgroup namespace: the quota is
    set on the process's cgroup (/proc/self/cgroup), or an ancestor's, not at the root."""
    from rnngraph._native import core

    assert core._cgroup_quota(cgroup_file, _cgroup_tree(tmp_path, files)) == pytest.approx(quota)


def test_thread_counts_past_the_cap_are_refused_and_integer_types_taken():
    """Workers live as long as the process: a count meant as "no limit" must not start
    millions of them. set_num_threads refuses more than MAX_THREADS (4096, as
    RNNGRAPH_NUM_THREADS); any type that says it is an integer (__index__) is taken."""

    class Count:
        def __index__(self):
            return 2

    before = rg.get_num_threads()
    try:
        for bad in (rg.config.MAX_THREADS + 1, 2**31 - 1):
            with pytest.raises(ValueError, match=r"^set_num_threads: expected 1 <= n <= 4096"):
                rg.set_num_threads(bad)
        for bad in (True, np.True_, 2.0, "2", np.array([2, 2])):
            with pytest.raises(TypeError, match=r"^set_num_threads: expected an int"):
                rg.set_num_threads(bad)
        rg.set_num_threads(Count())
        assert rg.get_num_threads() == 2
        rg.set_num_threads(np.array(3))  # a 0-d integer array, like a NumPy int
        assert rg.get_num_threads() == 3
    finally:
        rg.set_num_threads(before)
