"""Busy processes for bench_rnn.py --under-load K, and the idle-vs-loaded comparison.

``busy(k)`` starts K processes, each a Python ``while True: pass``, and kills them when its
``with`` block ends, on an exception or Ctrl-C as well (and at interpreter exit, through
atexit). Each spinner also asks the kernel to kill it when its parent dies (PR_SET_PDEATHSIG),
so not even a killed parent leaves one behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from records import LIBRARIES

RATIO_LIMIT = 3.0  # rnngraph loaded within this multiple of its idle time
SPIN = """import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() != {parent}:
    sys.exit()
while True:
    pass
"""
TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) * TICK_S


class Load:
    """K busy processes between ``start()`` and ``stop()``; ``record()`` says how they ran."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.processes: list[subprocess.Popen] = []
        self.spun: list[dict] = []

    def start(self) -> None:
        """Start the spinners; raise if one of them ends at once."""
        atexit.register(self.stop)
        code = SPIN.format(parent=os.getpid())
        for _ in range(self.k):
            self.processes.append(subprocess.Popen(
                [sys.executable, "-c", code], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if self.processes:
            time.sleep(0.5)  # the interpreters start and begin to spin
        dead = [p.pid for p in self.processes if p.poll() is not None]
        if dead:
            self.stop()
            raise RuntimeError(f"busy processes {dead} ended at once")
        self.started = time.perf_counter()
        self.load_average_start = list(os.getloadavg())

    def stop(self) -> None:
        """Kill every spinner still running (safe to call more than once)."""
        elapsed = time.perf_counter() - getattr(self, "started", time.perf_counter())
        if self.processes:
            self.load_average_end = list(os.getloadavg())
        for p in self.processes:
            alive = p.poll() is None
            cpu = _cpu_s(p.pid) if alive else None
            if alive:
                p.kill()
            p.wait()
            self.spun.append({"pid": p.pid, "alive_at_end": alive, "cpu_s": cpu,
                              "busy_fraction": cpu / elapsed if cpu and elapsed else None})
        self.processes = []

    def record(self) -> dict:
        """The JSON record of the load: K, load averages, each spinner's CPU time."""
        return {"k": self.k, "load_average_loaded_start": getattr(self, "load_average_start", None),
                "load_average_loaded_end": getattr(self, "load_average_end", None),
                "spinners": self.spun}


@contextlib.contextmanager
def busy(k: int) -> Iterator[Load]:
    """K busy processes while the ``with`` block runs, killed however it ends (none, and no
    wait, for K = 0)."""
    load = Load(k)
    try:
        load.start()
        yield load
    finally:
        load.stop()


def _entry(record: dict | None, library: str) -> dict:
    return (record or {}).get("libs", {}).get(library) or {}


def _best_peer(libs: dict, key: str) -> tuple[str | None, float | None]:
    """The peer with the least ``key`` (loaded_ms, loaded_mean_ms) and that value."""
    found = {lib: v[key] for lib, v in libs.items() if lib != "rnngraph" and v[key] is not None}
    best = min(found, key=found.get, default=None)
    return best, found.get(best)


def _at_most(mine: float | None, best: float | None) -> bool | None:
    return None if mine is None or best is None else mine <= best


def compare(idle: list, loaded: list, ratio_limit: float = RATIO_LIMIT) -> list[dict]:
    """Per (row, threads): each library's idle and loaded medians (and loaded means and p90s)
    and loaded / idle, whether rnngraph loaded is within ``ratio_limit`` × its idle, and
    whether it is at most the best (fastest) peer's loaded median, and mean."""
    at = {(r["row"], r["threads"]): r for r in loaded}
    out = []
    for r in idle:
        if not isinstance(r["threads"], int):
            continue
        other = at.get((r["row"], r["threads"]))
        libs = {}
        for lib in LIBRARIES:
            if lib not in r["libs"] and lib not in (other or {}).get("libs", {}):
                continue
            quiet, busy = _entry(r, lib), _entry(other, lib)
            idle_ms, loaded_ms = quiet.get("median_ms"), busy.get("median_ms")
            libs[lib] = {"idle_ms": idle_ms, "loaded_ms": loaded_ms,
                         "loaded_mean_ms": busy.get("mean_ms"), "loaded_p90_ms": busy.get("p90_ms"),
                         "ratio": loaded_ms / idle_ms if idle_ms and loaded_ms else None}
        mine = libs.get("rnngraph", {})
        best, best_ms = _best_peer(libs, "loaded_ms")
        _, best_mean_ms = _best_peer(libs, "loaded_mean_ms")
        ratio = mine.get("ratio")
        out.append({
            "row": r["row"], "label": r["label"], "shape": r["shape"], "mode": r["mode"],
            "threads": r["threads"], "libs": libs,
            "rnngraph_within_limit": None if ratio is None else ratio <= ratio_limit,
            "best_peer": best, "best_peer_loaded_ms": best_ms,
            "rnngraph_le_best_peer": _at_most(mine.get("loaded_ms"), best_ms),
            "rnngraph_mean_le_best_peer": _at_most(mine.get("loaded_mean_ms"), best_mean_ms)})
    return out
