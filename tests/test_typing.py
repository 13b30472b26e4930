"""The typed surface: ``mypy --strict`` on user scripts against the installed rnngraph, and
on the package's own source.

tests/typing/good.py must check clean (and run); tests/typing/bad.py holds mistakes, each
marked with ``# E: <expected message>`` on its line, and mypy must report exactly those lines.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rnngraph as rg
from rnngraph import descriptors

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = Path(__file__).parent / "typing"
GOOD, BAD = SCRIPTS / "good.py", SCRIPTS / "bad.py"
ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: (?P<message>.*)$")

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy is not installed (pip install '.[test]')")


@pytest.fixture(scope="module")
def mypy_errors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, list[str]]]:
    """{script name: {line: [error messages]}} from one mypy run over both scripts."""
    workdir = tmp_path_factory.mktemp("mypy")
    # From an empty folder: no project config is read and the source tree is not on mypy's
    # path, so `import rnngraph` resolves to the installed package.
    result = _mypy(["--strict", "--no-error-summary", "--show-absolute-path", "--cache-dir",
                    str(workdir / "cache"), str(GOOD), str(BAD)], cwd=workdir)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    errors: dict[str, dict[int, list[str]]] = {GOOD.name: {}, BAD.name: {}}
    for line in result.stdout.splitlines():
        match = ERROR.match(line)
        if match:
            lines = errors[Path(match["path"]).name]
            lines.setdefault(int(match["line"]), []).append(match["message"])
    return errors


def _mypy(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run([sys.executable, "-m", "mypy", *args], check=False, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not (ROOT / "python" / "rnngraph").is_dir(), reason="no source tree")
def test_package_checks_clean(tmp_path: Path) -> None:
    """mypy --strict over python/rnngraph with pyproject.toml's [tool.mypy]."""
    result = _mypy(["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir",
                    str(tmp_path / "cache"), str(ROOT / "python" / "rnngraph")], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_installed_package_is_typed() -> None:
    package = Path(rg.__file__).parent
    for name in ("py.typed", "_core.pyi", "_core_avx2.pyi", "_core_avx512.pyi"):
        assert (package / name).is_file(), f"{name} missing from the installed package"


def test_stubs_match_the_compiled_modules(tmp_path: Path) -> None:
    """mypy's stubtest: _core.pyi against each kernel level's module this CPU can load."""
    from rnngraph import _native

    modules = [f"rnngraph._core_{lvl}" if lvl != "baseline" else "rnngraph._core"
               for lvl in _native.supported_levels()]
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--concise", "--allowlist",
         str(SCRIPTS / "stubtest_allowlist.txt"), *modules],
        check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_correct_script_checks_clean(mypy_errors: dict[str, dict[int, list[str]]]) -> None:
    assert mypy_errors[GOOD.name] == {}


def test_correct_script_runs() -> None:
    result = subprocess.run([sys.executable, str(GOOD)], check=False, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_mistakes_are_reported(mypy_errors: dict[str, dict[int, list[str]]]) -> None:
    expected = {number: line.split("# E: ", 1)[1].strip()
                for number, line in enumerate(BAD.read_text().splitlines(), start=1)
                if "# E: " in line}
    assert len(expected) >= 2
    reported = mypy_errors[BAD.name]
    for number, message in expected.items():
        assert any(message in m for m in reported.get(number, [])), (
            f"bad.py:{number}: expected {message!r}, mypy said {reported.get(number)}")
    assert set(reported) == set(expected), f"errors on unmarked lines: {reported}"


@pytest.mark.parametrize("cls", [rg.SingleGateRNNDescriptor, rg.LSTMDescriptor,
                                 rg.GRUDescriptor])
def test_descriptor_types_match_their_properties(cls: type) -> None:
    """The properties' annotations and the keywords of the signature type checkers see (under
    TYPE_CHECKING) name every property with its type and default."""
    flags, activations = cls._flags, cls._activations
    hints = {k: v for k, v in inspect.get_annotations(cls, eval_str=True).items()
             if not k.startswith("_")}
    for base in cls.__mro__[1:]:
        hints.update({k: v for k, v in inspect.get_annotations(base, eval_str=True).items()
                      if not k.startswith("_")})
    assert hints == {**dict.fromkeys(flags, bool), **dict.fromkeys(activations, rg.RNNActivation)}
    tree = ast.parse(inspect.getsource(descriptors))
    (init,) = [node for c in tree.body if isinstance(c, ast.ClassDef) and c.name == cls.__name__
               for node in ast.walk(c)
               if isinstance(node, ast.FunctionDef) and node.name == "__init__"]
    signature = {a.arg: ast.unparse(d) for a, d in zip(init.args.kwonlyargs,
                                                       init.args.kw_defaults) if d is not None}
    expected = {**dict.fromkeys(flags, "False"),
                **{k: f"RNNActivation.{v.name}" for k, v in activations.items()}}
    assert signature == expected
