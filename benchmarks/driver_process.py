"""Building and running the benchmark's C++ drivers (``onednn/rnn_driver.cpp``,
``drivers/compiled_call.cpp``): each is compiled into ``benchmarks/build/`` (ignored by git)
when missing or older than one of its sources, and runs in a process of its own that prints
one JSON line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

# What both C++ drivers include (timing, .f32 files, main): a driver older than it is rebuilt.
SHARED_HEADER = Path(__file__).resolve().parent / "drivers" / "driver.hpp"


def build_if_stale(binary: Path, sources: list[Path], compile_line: list[str]) -> Path:
    """``binary``, compiled by ``compile_line`` (its output file appended after ``-o``) when
    missing or older than any of ``sources``. The compiler writes a scratch file that then
    replaces the binary, so concurrent builds never collide."""
    newest = max(source.stat().st_mtime for source in sources)
    if not binary.exists() or binary.stat().st_mtime < newest:
        binary.parent.mkdir(parents=True, exist_ok=True)
        scratch = binary.with_suffix(f".{os.getpid()}.tmp")
        done = subprocess.run([*compile_line, "-o", str(scratch)], capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"building {binary.name} failed: {done.stderr.strip()[-2000:]}")
        scratch.replace(binary)
    return binary


def run_json(line: list[str], env: dict[str, str] | None = None,
             timeout_s: float | None = None) -> dict:
    """Run a driver's command ``line`` with ``env`` added to this process's environment;
    the JSON object of the last line it prints (RuntimeError with its stderr if it fails)."""
    done = subprocess.run(line, capture_output=True, text=True, env=os.environ | (env or {}),
                          timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        name = Path(line[0]).name
        raise RuntimeError(f"{name} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def cmake() -> str:
    """The cmake of this interpreter's environment (the test extra's), else the one on PATH."""
    scripts = Path(sysconfig.get_path("scripts"))
    for candidate in (scripts / "cmake", shutil.which("cmake")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise RuntimeError("cmake is not installed (pip install '.[test]' installs it)")
