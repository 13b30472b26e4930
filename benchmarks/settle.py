"""The settle check: proof that no other thread of this process is running before a measurement.

PyTorch's OpenMP threads, ONNX Runtime's pool and OpenBLAS's threads keep spinning for a while
after a call. Before a measurement, ``settle`` reads the CPU time of every thread of this
process (/proc/self/task/*/schedstat, in ns, where the kernel has it; else utime + stime of
/proc/self/task/*/stat, in clock ticks), sleeps one window, reads again, and sums what the
threads other than the calling (measuring) one consumed meanwhile. With ``wait`` it repeats
the window until that is ~0 or ``limit_s`` has passed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

TASKS = Path("/proc/self/task")
T = TypeVar("T")
TICK_NS = 1e9 / os.sysconf("SC_CLK_TCK")
WINDOW_S = 0.1
LIMIT_S = 2.0
QUIET_MS = 2.0  # CPU ms in a window below which the other threads count as stopped


def _schedstat(task: Path) -> list[int]:
    """/proc/.../schedstat: ns on a CPU, ns runnable on a run queue, time slices."""
    return [int(x) for x in (task / "schedstat").read_text().split()]


def _schedstat_ns(task: Path) -> int:
    return _schedstat(task)[0]


def _stat_ns(task: Path) -> int:
    fields = (task / "stat").read_text().rpartition(")")[2].split()
    return int((int(fields[11]) + int(fields[12])) * TICK_NS)  # utime, stime (fields 14, 15)


def source() -> str:
    """Which /proc file gives per-thread CPU time here: 'schedstat' (ns) or 'stat' (ticks)."""
    try:
        _schedstat_ns(TASKS / str(threading.get_native_id()))
        return "schedstat"
    except OSError:
        return "stat"


_HAS_SCHEDSTAT = source() == "schedstat"
_READ = _schedstat_ns if _HAS_SCHEDSTAT else _stat_ns


def _per_thread(read: Callable[[Path], T]) -> dict[int, T]:
    """``read(its /proc directory)`` of every live thread of this process, by thread id."""
    out = {}
    for task in TASKS.iterdir():
        try:
            out[int(task.name)] = read(task)
        except (OSError, ValueError, IndexError, KeyError):
            pass  # the thread ended between listing and reading
    return out


def thread_cpu_ns() -> dict[int, int]:
    """CPU time (ns) of every live thread of this process, by thread id."""
    return _per_thread(_READ)


def _switches(task: Path) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines()
                  if ":" in line)
    return int(fields["voluntary_ctxt_switches"]), int(fields["nonvoluntary_ctxt_switches"])


def thread_runqueue_ns() -> dict[int, int]:
    """Time (ns) every live thread of this process has spent runnable on a run queue while
    another thread had its CPU, by thread id; empty where the kernel has no schedstat."""
    return _per_thread(lambda task: _schedstat(task)[1]) if _HAS_SCHEDSTAT else {}


def thread_switches() -> dict[int, tuple[int, int]]:
    """(voluntary, involuntary) context switches so far of every live thread of this process,
    by thread id: a thread slept, or the OS took its core."""
    return _per_thread(_switches)


def others_cpu_ms(window_s: float = WINDOW_S) -> float:
    """CPU ms the threads other than the caller used during ``window_s`` of sleep."""
    me = threading.get_native_id()
    before = thread_cpu_ns()
    time.sleep(window_s)
    after = thread_cpu_ns()
    return sum(ns - before.get(tid, 0) for tid, ns in after.items() if tid != me) / 1e6


def settle(window_s: float = WINDOW_S, wait: bool = True, limit_s: float = LIMIT_S,
           quiet_ms: float = QUIET_MS) -> dict:
    """One window (more, with ``wait``, until the other threads are quiet or ``limit_s``).

    Returns {"cpu_ms": the last window's, "first_cpu_ms": the first window's,
    "waited_ms": time beyond the first window, "settled": last window quiet}."""
    t0 = time.perf_counter()
    first = last = others_cpu_ms(window_s)
    while wait and last > quiet_ms and time.perf_counter() - t0 < limit_s:
        last = others_cpu_ms(window_s)
    return {"cpu_ms": last, "first_cpu_ms": first, "settled": last <= quiet_ms,
            "waited_ms": max(0.0, 1e3 * (time.perf_counter() - t0 - window_s))}


def summary(checks: list[dict]) -> dict:
    """The JSON fields of a measurement from its settle checks (one before each share)."""
    return {"settle_cpu_ms": max(c["cpu_ms"] for c in checks),
            "settle_cpu_ms_first": max(c["first_cpu_ms"] for c in checks),
            "settle_waited_ms": sum(c["waited_ms"] for c in checks),
            "settled": all(c["settled"] for c in checks), "settle_checks": len(checks)}
