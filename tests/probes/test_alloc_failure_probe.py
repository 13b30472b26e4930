"""Allocation failure: in child processes whose address space is limited (RLIMIT_AS) to
what they use plus a headroom swept from 0 to 256 MiB, an LSTM training step (through the
Graph, or straight into the compiled module; with worker threads, BLAS buffers and pools
already started, or not) must succeed or raise MemoryError naming the op, never kill the
process (OpenBLAS calls exit(1) when it cannot map its buffer) or raise anything else; and
once the limit is raised again the next calls must succeed with the same bits.
(probe_alloc_driver.py runs one case per process.)"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import re
import subprocess
import sys

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe_alloc_driver.py")
HEADROOMS_MIB = (0, 8, 16, 32, 64, 128, 256)
NAMES = {"graph": ("LSTM", "LSTMGradients", "run"),
         "core": ("LSTM", "LSTMGradients", "rnn_forward", "rnn_gradients")}


def named(message: str, names: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![A-Za-z0-9_]){n}(?![A-Za-z0-9_])", message) for n in names)


def run_case(headroom: int, warmth: str, layer: str) -> tuple[str, str]:
    """(outcome class, detail) of one case."""
    try:
        run = subprocess.run([sys.executable, DRIVER, str(headroom), warmth, layer],
                             capture_output=True, check=False, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "hang", "no answer within 120 s"
    lines = run.stdout.strip().splitlines()
    if run.returncode != 0 or not lines:
        died = "openblas_exit" if "Memory allocation still failed" in run.stderr else "died"
        return died, f"exit status {run.returncode}: {run.stderr[-600:]}"
    report = json.loads(lines[-1])
    if report["after"] != "ok" or not report["same_bits"] or not report["finite"]:
        return "not_recovered", json.dumps(report)
    if report["limited"] == "ok":
        return "succeeded_under_limit", ""
    if report["limited"] != "MemoryError":
        return "unclean_exception", json.dumps(report)
    if not named(report["message"], NAMES[layer]):
        return "unnamed_error", report["message"]
    return "memory_error_named", report["message"]


def test_allocation_failure_raises_named_memory_error_and_recovers():
    cases = [(h, w, layer) for h in HEADROOMS_MIB for w in ("warm", "cold")
             for layer in ("graph", "core")]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        outcomes = list(pool.map(lambda case: run_case(*case), cases))
    counts = collections.Counter(cls for cls, _ in outcomes)
    good = {"memory_error_named", "succeeded_under_limit"}
    failures = [f"{cls} at {h} MiB headroom, {w}, {layer}: {detail}"
                for (h, w, layer), (cls, detail) in zip(cases, outcomes) if cls not in good]
    assert not failures, f"{dict(counts)}\n" + "\n".join(failures)
    assert counts["memory_error_named"] > 0, dict(counts)  # the limits did bite
