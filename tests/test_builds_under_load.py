"""benchmarks/builds_under_load.py: a build directory without rnngraph in it (a build that
failed) is refused, rather than timing the installed rnngraph under the build's name."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import builds_under_load


def test_a_directory_without_a_build_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="not this build"):
        builds_under_load.one_process(str(tmp_path / "no-build"), "1", "1")
