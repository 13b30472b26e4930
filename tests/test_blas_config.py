"""rnngraph's BLAS: what show_config() reports, its thread setting, and that it runs kernels
for this CPU without touching the process environment (README.md, "BLAS and threads")."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rnngraph as rg
from rnngraph import config

# OpenBLAS's DYNAMIC_ARCH fallbacks when it does not recognise the CPU (its "Prescott" core
# runs SSE3 kernels only: 5x slower here; README.md, "BLAS and threads").
GENERIC_CORES = ("Prescott", "Generic", "generic", "GENERIC", "PRESCOTT")


def cpu_flags() -> set:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    raise AssertionError("/proc/cpuinfo has no flags line")


HAS_AVX512 = "avx512f" in cpu_flags()


def run_python(code: str, **environment) -> dict:
    """Run ``code`` in a fresh interpreter; ``environment`` values of None remove a variable.
    The code prints one JSON line, returned as a dict."""
    env = dict(os.environ)
    for key, value in environment.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


PROBE = """
import json, os
before = os.environ.get("OPENBLAS_CORETYPE")
import rnngraph
info = rnngraph.config.blas_info()
print(json.dumps({"before": before, "after": os.environ.get("OPENBLAS_CORETYPE"),
                  "core": info["core"]}))
"""


def test_show_config_prints_library_build_core_and_threads(capsys):
    info = config.blas_info()
    rg.show_config()
    out = capsys.readouterr().out
    assert info["library"] and info["library"] in out
    assert "openblas" in out.lower()
    assert re.search(r"\d+\.\d+\.\d+", out), "no version number in show_config()"
    assert info["config"] in out
    assert re.search(rf"core\s*:\s*{re.escape(info['core'])}\s*$", out, re.MULTILINE | re.IGNORECASE)
    assert re.search(rf"^rnngraph threads\s*:\s*{rg.get_num_threads()}\s*$", out, re.MULTILINE)
    # rnngraph runs its own threads and keeps its BLAS on one (test_threads.py).
    assert re.search(r"^BLAS threads\s*:\s*1\b", out, re.MULTILINE)
    assert info["num_threads"] == 1


def test_set_num_threads_round_trip():
    original = rg.get_num_threads()
    try:
        for n in (1, 2, 1):
            rg.set_num_threads(n)
            assert rg.get_num_threads() == n
            assert config.blas_info()["num_threads"] == 1  # the BLAS stays single-threaded
    finally:
        rg.set_num_threads(original)
    assert rg.get_num_threads() == original


@pytest.mark.parametrize("bad,error", [(0, ValueError), (-1, ValueError), (1.5, TypeError),
                                       ("2", TypeError), (None, TypeError), (True, TypeError)],
                         ids=["zero", "negative", "float", "string", "None", "bool"])
def test_set_num_threads_rejects_bad_values(bad, error):
    original = rg.get_num_threads()
    with pytest.raises(error):
        rg.set_num_threads(bad)
    assert rg.get_num_threads() == original


def test_detected_core_is_not_a_generic_fallback():
    """README.md, "BLAS and threads": on an AVX-512 CPU the kernels must be AVX-512 ones; anywhere,
    never the generic Prescott fallback an old OpenBLAS picks for an unknown CPU."""
    core = config.blas_info()["core"]
    assert core not in GENERIC_CORES, f"rnngraph's OpenBLAS fell back to {core}"
    if HAS_AVX512:
        assert core in config.AVX512_CORES, f"AVX-512 CPU, but rnngraph's BLAS core is {core}"


def test_import_leaves_openblas_coretype_untouched():
    """A process-wide OPENBLAS_CORETYPE (here Haswell, a common workaround for old OpenBLAS
    builds) stays exactly as it was, and rnngraph still picks this CPU's own kernels."""
    result = run_python(PROBE, OPENBLAS_CORETYPE="Haswell", RNNGRAPH_OPENBLAS_CORETYPE=None)
    assert result["before"] == "Haswell" and result["after"] == "Haswell"
    assert result["core"] not in GENERIC_CORES
    if HAS_AVX512:
        assert result["core"] in config.AVX512_CORES, result


def test_import_without_openblas_coretype_does_not_set_it():
    result = run_python(PROBE, OPENBLAS_CORETYPE=None, RNNGRAPH_OPENBLAS_CORETYPE=None)
    assert result["before"] is None and result["after"] is None
    assert result["core"] not in GENERIC_CORES
    if HAS_AVX512:
        assert result["core"] in config.AVX512_CORES, result


def test_rnngraph_coretype_override_selects_the_core():
    """RNNGRAPH_OPENBLAS_CORETYPE names rnngraph's core explicitly, without touching
    OPENBLAS_CORETYPE."""
    result = run_python(PROBE, OPENBLAS_CORETYPE=None, RNNGRAPH_OPENBLAS_CORETYPE="Haswell")
    assert result["core"] == "Haswell"
    assert result["after"] is None
    result = run_python(PROBE, OPENBLAS_CORETYPE="SkylakeX", RNNGRAPH_OPENBLAS_CORETYPE="Haswell")
    assert result["core"] == "Haswell" and result["after"] == "SkylakeX"
