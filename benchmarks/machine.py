"""What a results file records about where and with what it ran."""

from __future__ import annotations

import contextlib
import datetime
import io
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KEY_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "amx_tile")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "OPENBLAS_CORETYPE", "RNNGRAPH_OPENBLAS_CORETYPE", "RNNGRAPH_KERNELS",
                    "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def cpu() -> dict:
    info = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        info.setdefault(key.strip(), value.strip())
    flags = info.get("flags", "").split()
    return {
        "model": info.get("model name", platform.processor()),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "key_flags": {f: f in flags for f in KEY_FLAGS},
        "flags": flags,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }


def load_average() -> list[float]:
    return list(os.getloadavg())


def _process_cpu() -> dict[int, tuple[int, int, str]]:
    """{pid: (parent pid, utime + stime in ticks, name)} of every process."""
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text.rpartition(")")[2].split()
        out[int(stat.parent.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]),
                                      text[text.find("(") + 1:text.rfind(")")])
    return out


def busy_processes(window_s: float = 0.3, min_cpus: float = 0.2) -> list[dict]:
    """Other processes (not this one or its children) that used at least ``min_cpus`` CPUs
    over ``window_s``: what else competed with an 'idle' measurement on a shared machine."""
    import time

    before = _process_cpu()
    time.sleep(window_s)
    after = _process_cpu()
    tick = os.sysconf("SC_CLK_TCK")
    ours = {os.getpid()} | {pid for pid, (parent, _, _) in after.items() if parent == os.getpid()}
    return [{"pid": pid, "name": name, "cpus": round((cpu - before[pid][1]) / tick / window_s, 2)}
            for pid, (_, cpu, name) in after.items()
            if pid in before and pid not in ours
            and (cpu - before[pid][1]) / tick / window_s >= min_cpus]


def git() -> dict:
    def run(*args):
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    status = run("status", "--porcelain")
    return {"commit": run("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


def dist(name: str) -> str | None:
    """The installed distribution's version, without importing it."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def versions(libraries: tuple = ("rnngraph", "torch", "onnxruntime")) -> dict:
    """Versions of ``libraries``, importing only those (a measuring child process asks for its
    own library alone, so it loads no other library's thread pool)."""
    import numpy

    out: dict = {"numpy": numpy.__version__}
    if "rnngraph" in libraries:
        import rnngraph
        from rnngraph.config import blas_info

        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            rnngraph.show_config()
        out |= {
            "rnngraph": rnngraph.__version__,
            "rnngraph_file": rnngraph.__file__,  # the install measured (may differ from the tree)
            "rnngraph_show_config": shown.getvalue().splitlines(),
            "rnngraph_blas": blas_info(),
            "scipy-openblas32": dist("scipy-openblas32"),
        }
    if "torch" in libraries:
        import torch

        out |= {"torch": torch.__version__, "torch_mkldnn": torch.backends.mkldnn.is_available()}
    if "onnxruntime" in libraries:
        import onnx
        import onnxruntime

        out |= {"onnxruntime": onnxruntime.__version__, "onnx": onnx.__version__}
    if "onednn" in libraries:
        out["onednn"] = debian_package("libdnnl-dev")
    return out


def debian_package(name: str) -> str | None:
    """The installed version of a Debian package (dpkg-query), or None."""
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True,
                              text=True, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def thread_variables() -> dict:
    return {k: os.environ.get(k) for k in THREAD_VARIABLES}
