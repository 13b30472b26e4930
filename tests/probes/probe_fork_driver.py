"""Fork many times while another thread runs multi-threaded kernels (run by
test_fork_probe.py in a process of its own).

``KERNEL_THREADS`` Python threads loop ``g.run`` on LSTM training graphs large enough for
rnngraph's worker threads and short enough to pass through its locks often (thread count,
worker pool, memory pools), while the main thread forks ``FORKS`` children, at most
``ALIVE`` at a time. Each child runs one small op (every other one large enough to start
the child's own worker pool), checks its outputs and leaves with os._exit: 0 if they are
right, 3 if it raised or they are wrong. A fork can copy a mutex that a kernel thread holds
at that moment, or a pool in the middle of an update: a child then blocks for ever or finds
its memory corrupt. The parent waits for each child with a deadline, kills a child past it
and counts it as hung. Past ``MAX_HUNG`` hung children it stops forking.

Measured on the commit before rnngraph's fork handlers (c5194de), 2,000 forks: 1 to 3 hung
children per run in 5 of 6 runs, and a child aborted by glibc ("double free or corruption")
in the other.

Prints one JSON line: {"forks", "ok", "failed", "hung", "kernel_runs", "kernel_error",
"kernel_thread_hung", "examples", "stacks"} (stacks: gdb's backtraces of the first hung
children, where gdb is installed).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings

import numpy as np
from probe_process import lstm_training_graph

import rnngraph as rg

FORKS = 2000
KERNEL_THREADS = 3
ALIVE = 4  # children at a time
DEADLINE = 20.0  # seconds a child may take (it needs milliseconds)
MAX_HUNG = 10


def training_graph(T: int, N: int, I: int, H: int, seed: int):
    """An LSTM forward and gradient op on placeholders: (graph, feeds, targets, shapes)."""
    g, feeds, targets = lstm_training_graph(T, N, I, H, seed)
    shapes = [(T, N, H), (T, N, I), (4 * H, H), (4 * H, I)]
    return g, feeds, targets, shapes


def native_stacks(pid: int) -> str:
    """Every thread's stack of a hung child, from gdb if it is installed (a diagnosis for
    the report; the probe does not need it)."""
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(no gdb: no stacks)"
    try:
        run = subprocess.run([gdb, "-p", str(pid), "-batch", "-ex", "thread apply all bt 30"],
                             capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return "(gdb timed out)"
    frames = [line for line in run.stdout.splitlines() if line.startswith(("#", "Thread"))]
    return "\n".join(frames)[-6000:]


def child(index: int, small, medium) -> None:
    """Run one op and leave (never returns)."""
    code = 0
    try:
        g, feeds, targets, shapes = small if index % 2 == 0 else medium
        out = g.run(feeds=feeds, targetTensors=targets)
        for tensor, shape in zip(targets, shapes):
            value = out[tensor]
            if value.shape != shape or not np.isfinite(value).all():
                raise AssertionError(f"{tensor.name}: shape {value.shape}, expected {shape}")
    except BaseException:  # noqa: BLE001 - reported through the exit status
        traceback.print_exc()
        code = 3
    os._exit(code)


def main() -> None:
    forks = int(sys.argv[1]) if len(sys.argv) > 1 else FORKS
    rg.set_num_threads(2)
    busy = [training_graph(T=1 + 2 * k, N=64, I=64, H=64, seed=k) for k in range(KERNEL_THREADS)]
    small = training_graph(T=3, N=2, I=3, H=4, seed=10)
    medium = training_graph(T=4, N=64, I=64, H=128, seed=11)

    stop = threading.Event()
    kernel = {"runs": 0, "error": None}

    def kernels(graph) -> None:
        g, feeds, targets, _ = graph
        try:
            while not stop.is_set():
                g.run(feeds=feeds, targetTensors=targets)
                kernel["runs"] += 1
        except BaseException as error:  # noqa: BLE001 - reported
            kernel["error"] = repr(error)

    workers = [threading.Thread(target=kernels, args=(graph,), daemon=True) for graph in busy]
    for worker in workers:
        worker.start()
    while kernel["runs"] == 0 and kernel["error"] is None:
        time.sleep(0.001)  # the kernel thread is running before the first fork

    counts = {"ok": 0, "failed": 0, "hung": 0}
    examples: list[str] = []
    stacks: list[str] = []  # of the first hung children, where gdb is installed
    alive: dict[int, tuple[int, float]] = {}  # pid -> (index, started)
    started = 0

    def finished(pid: int, status: int) -> None:
        index, _ = alive.pop(pid)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            counts["ok"] += 1
            return
        counts["failed"] += 1
        if len(examples) < 5:
            how = (f"exit status {os.WEXITSTATUS(status)}" if os.WIFEXITED(status)
                   else f"signal {os.WTERMSIG(status)}")
            examples.append(f"child {index}: {how}")

    with warnings.catch_warnings():
        # Python 3.12+ warns that fork() in a multi-threaded process may deadlock: that is
        # what this measures.
        warnings.simplefilter("ignore", DeprecationWarning)
        while started < forks or alive:
            while alive:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                finished(pid, status)
            now = time.monotonic()
            for pid, (index, since) in list(alive.items()):
                if now - since > DEADLINE:
                    if len(stacks) < 2:
                        stacks.append(f"child {index}:\n{native_stacks(pid)}")
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    alive.pop(pid)
                    counts["hung"] += 1
                    if len(examples) < 10:
                        examples.append(f"child {index}: hung (killed after {DEADLINE:.0f} s)")
            if started < forks and len(alive) < ALIVE and counts["hung"] < MAX_HUNG:
                pid = os.fork()
                if pid == 0:
                    child(started, small, medium)
                alive[pid] = (started, time.monotonic())
                started += 1
            elif started >= forks or counts["hung"] >= MAX_HUNG:
                if not alive:
                    break
                time.sleep(0.002)
            else:
                time.sleep(0.0002)
    stop.set()
    for worker in workers:
        worker.join(timeout=60)
    print(json.dumps({"forks": started, **counts, "kernel_runs": kernel["runs"],
                      "kernel_error": kernel["error"],
                      "kernel_thread_hung": any(w.is_alive() for w in workers),
                      "examples": examples,
                      "stacks": stacks}),
          flush=True)
    os._exit(0)  # (a hung kernel thread must not keep the process alive)


if __name__ == "__main__":
    main()
