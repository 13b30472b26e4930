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


def git() -> dict:
    def run(*args):
        try:
            return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None

    status = run("status", "--porcelain")
    return {"commit": run("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


def versions() -> dict:
    import numpy
    import onnx
    import onnxruntime
    import torch

    import rnngraph
    from rnngraph.config import blas_info

    def dist(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        rnngraph.show_config()
    return {
        "rnngraph": rnngraph.__version__,
        "rnngraph_file": rnngraph.__file__,  # the install measured (may differ from the tree)
        "rnngraph_show_config": shown.getvalue().splitlines(),
        "rnngraph_blas": blas_info(),
        "scipy-openblas32": dist("scipy-openblas32"),
        "numpy": numpy.__version__,
        "torch": torch.__version__,
        "torch_mkldnn": torch.backends.mkldnn.is_available(),
        "onnxruntime": onnxruntime.__version__,
        "onnx": onnx.__version__,
    }


def now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def thread_variables() -> dict:
    return {k: os.environ.get(k) for k in THREAD_VARIABLES}
