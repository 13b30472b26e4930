"""Run a benchmark script again as a measuring child and read its result: the last line of
its standard output, as JSON (neighbours.py, bench_training_step.py and scaling.py measure
each case in a fresh process this way; bench_rnn.py's isolated mode has its own protocol,
isolation.py).

The child dies with the parent (PR_SET_PDEATHSIG), a child past ``timeout_s`` is killed, and
a failing child's error is raised with the end of what it wrote to standard error.
"""

from __future__ import annotations

import ctypes
import json
import signal
import subprocess
import sys
from pathlib import Path


def die_with_parent() -> None:
    """Ask the kernel to kill this process when its parent dies."""
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def run_json(script: str | Path, args: list[str], timeout_s: float | None = None,
             env: dict | None = None) -> dict:
    """The JSON object that ``python3 script *args`` printed last (``env``: the child's
    environment, default this process's)."""
    command = [sys.executable, str(script), *args]
    try:
        done = subprocess.run(
            command,
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            preexec_fn=die_with_parent,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except subprocess.TimeoutExpired as e:
        raise RuntimeError(f"{' '.join(command[1:])}: no result within {timeout_s} s") from e
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-20:])
        raise RuntimeError(f"{' '.join(command[1:])} failed (status {done.returncode}):\n{tail}")
    return json.loads(lines[-1])
