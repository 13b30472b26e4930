"""The team cap of rnngraph's own workers (cpp/src/runtime/team_cap.hpp): on a machine whose
cores other processes keep busy, jobs get fewer threads, and the results stay bit-identical;
once the machine is idle again the team is given back. (Speed is measured in benchmarks/.)"""

import os
import subprocess
import sys
import time

import pytest
from test_runtime import assert_same_bits, run, training_graph

import rnngraph as rg
from rnngraph._native import core
from toolkit import blas_threads

CPUS = os.cpu_count() or 2


@pytest.fixture
def fresh_cap():
    core._set_team_cap(False)  # gives back any halving in force
    core._set_team_cap(True)
    yield
    core._set_team_cap(False)
    core._set_team_cap(True)


def calls_until(condition, graph, feeds, targets, expected, limit_s):
    """Run the graph until ``condition()`` holds or ``limit_s`` passes, checking every result."""
    start = time.monotonic()
    while not condition() and time.monotonic() - start < limit_s:
        assert_same_bits(run(graph, feeds, targets), expected, "under the team cap")
    return condition()


def test_the_cap_switch_and_its_counters(fresh_cap):
    stalled, halvings, halved = core._team_cap()
    assert stalled >= 0 and halvings >= 0 and halved == 0


def test_a_loaded_machine_halves_the_team_and_an_idle_one_gives_it_back(fresh_cap):
    # N = 3: the threads share each step (a team), the path the cap is for.
    g, feeds, targets = training_graph(7, 3, 48, 256)
    with blas_threads(1):
        expected = run(g, feeds, targets)
    halvings_before = core._team_cap()[1]
    threads = max(2, CPUS)
    with blas_threads(threads):
        procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                 for _ in range(CPUS)]
        try:
            halved = calls_until(lambda: core._team_cap()[1] > halvings_before, g, feeds,
                                 targets, expected, limit_s=20)
        finally:
            for p in procs:
                p.kill()
                p.wait()
        assert halved, f"no halving in 20 s with {CPUS} busy processes: {core._team_cap()}"
        assert rg.get_num_threads() == threads  # the cap never changes the thread count
        # Idle again: each rest without lost time gives one halving back.
        given_back = calls_until(lambda: core._team_cap()[2] == 0, g, feeds, targets, expected,
                                 limit_s=20)
        assert given_back, f"halvings still in force after 20 s idle: {core._team_cap()}"
