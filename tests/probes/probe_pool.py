"""Run fuzz specs in a pool of child processes (probe_worker.py), so that a crash or a hang
is an outcome of one case instead of the end of the test run.

Each worker thread owns one child and sends it one case at a time. A child that dies (a
signal, an abort, OpenBLAS's exit(1)) is recorded as ``crash`` for the case it was running,
with its exit status and the tail of its stderr, and replaced; a case that does not answer
within ``timeout`` seconds is recorded as ``hang`` and its child killed and replaced. Past
``max_crashes`` crashes or ``max_hangs`` hangs, or the ``budget`` in seconds, the remaining
cases are not run (counted as ``not_run``, itself a failure).
"""

from __future__ import annotations

import collections
import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from probe_fuzz_cases import FAILURE_CLASSES

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_worker.py")
MARK = "@@"


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **(extra or {})}
    if "libasan" in env.get("LD_PRELOAD", ""):
        # Under ASan the children bound their allocations here instead of with RLIMIT_AS,
        # and a failed allocation returns null (operator new then throws bad_alloc).
        env["ASAN_OPTIONS"] = ":".join(filter(None, [
            env.get("ASAN_OPTIONS", ""), "allocator_may_return_null=1",
            "max_allocation_size_mb=4096"]))
    return env


class Child:
    """One probe_worker process."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - open while the child lives
        self.proc = subprocess.Popen([sys.executable, WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr,
                                     env=child_environment(env))
        self.buffer = b""

    def stderr_tail(self, size: int = 4000) -> str:
        self.stderr.flush()
        self.stderr.seek(0, os.SEEK_END)
        length = self.stderr.tell()
        self.stderr.seek(max(0, length - size))
        return self.stderr.read().decode(errors="replace")

    def ask(self, index: int, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
        """The case's result, or a crash or hang record (after which the child is gone)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps({"i": index, "spec": spec}) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self.crashed()
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith(MARK):
                    answer = json.loads(text[len(MARK):])
                    if answer["i"] == index:
                        return answer["result"]
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                return {"cls": "hang", "why": f"no answer within {timeout:.0f} s",
                        "stderr": self.stderr_tail(1500)}
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return self.crashed()
                self.buffer += chunk

    def crashed(self) -> dict[str, Any]:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.returncode
        how = f"killed by signal {-rc}" if rc is not None and rc < 0 else f"exit status {rc}"
        return {"cls": "crash", "rc": rc, "why": how, "stderr": self.stderr_tail()}

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.close()  # the child's loop ends
        except BrokenPipeError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self.proc.stdout.close()
        self.stderr.close()


def run_specs(specs: list[dict[str, Any]], workers: int = 2, timeout: float = 30.0,
              budget: float = 600.0, max_crashes: int = 20,
              max_hangs: int = 3, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Results in the order of ``specs``; each a probe_fuzz_cases outcome dict."""
    results: list[dict[str, Any] | None] = [None] * len(specs)
    todo: queue.Queue[int] = queue.Queue()
    for index in range(len(specs)):
        todo.put(index)
    counts = collections.Counter()
    lock = threading.Lock()
    stop_at = time.monotonic() + budget

    def work() -> None:
        child = Child(env)
        try:
            while True:
                with lock:
                    if counts["crash"] >= max_crashes or counts["hang"] >= max_hangs:
                        return
                if time.monotonic() > stop_at:
                    return
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                result = child.ask(index, specs[index], timeout)
                results[index] = result
                if result["cls"] in ("crash", "hang"):
                    with lock:
                        counts[result["cls"]] += 1
                    child.close()
                    child = Child(env)
        finally:
            child.close()

    threads = [threading.Thread(target=work) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [r if r is not None else {"cls": "not_run", "why": "stopped after too many crashes "
                                     "or hangs, or past the time budget"} for r in results]


def summarise(specs: list[dict[str, Any]], results: list[dict[str, Any]],
              examples: int = 3) -> tuple[dict[str, int], str]:
    """Counts per outcome class (and per layer), and a report of every failure class with
    its first examples and how to reproduce them."""
    counts: collections.Counter[str] = collections.Counter(r["cls"] for r in results)
    by_layer: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for spec, result in zip(specs, results):
        by_layer[spec["layer"]][result["cls"]] += 1
    lines = [f"{len(results)} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))]
    for layer, layer_counts in sorted(by_layer.items()):
        lines.append(f"  {layer}: " + ", ".join(f"{k} {v}" for k, v in sorted(layer_counts.items())))
    failing = [c for c in (*FAILURE_CLASSES, "not_run") if counts.get(c)]
    for cls in failing:
        groups: dict[str, list[int]] = collections.defaultdict(list)
        for index, result in enumerate(results):
            if result["cls"] == cls:
                groups[case_kind(specs[index])].append(index)
        lines.append(f"\n== {cls}: {counts[cls]} ==  by case kind: " + ", ".join(
            f"{k} {len(v)}" for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))))
        for kind, indices in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:examples]:
            index = indices[0]
            brief = {k: v for k, v in results[index].items() if k != "cls"}
            lines.append(f"- [{kind}] {json.dumps(brief, default=repr)[:1500]}")
            lines.append(f"  reproduce: python3 tests/probes/probe_worker.py --case "
                         f"'{json.dumps(specs[index])}'")
    return dict(counts), "\n".join(lines)


def case_kind(spec: dict[str, Any]) -> str:
    """layer/op/mutation[/argument], e.g. ``graph/LSTM/dtype/bool``."""
    mut = spec.get("mut") or {}
    parts = [spec["layer"], spec["cell"] + ("Gradients" if spec.get("grad") else "")]
    parts.append(str(mut.get("kind", "valid")) + ("/huge" if spec.get("huge") else ""))
    if isinstance(mut.get("arg"), str):
        parts.append(mut["arg"])
    return "/".join(parts)


def failure_counts(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if k in (*FAILURE_CLASSES, "not_run")}
