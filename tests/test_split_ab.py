"""benchmarks/split_ab.py: the settings each value of --splits puts in force, and their undoing."""

import contextlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import split_ab

from rnngraph._native import core


def test_values_name_a_path_or_pairs():
    assert split_ab.forced("split", "team") == {"split": "team"}
    assert split_ab.forced("split", "split=team,steps=units") == {"split": "team",
                                                                  "steps": "units"}
    assert split_ab.forced("threshold", "auto") == {}
    assert split_ab.forced("threshold", "team=65536,step=1") == {"team": "65536", "step": "1"}
    with pytest.raises(ValueError):
        split_ab.forced("threshold", "team")


def test_thresholds_move_and_come_back():
    defaults = dict(core._parallel_thresholds())
    try:
        split_ab.apply("threshold", {"team": "65536"})
        moved = dict(core._parallel_thresholds())
        assert moved["team"] == 65536 and moved["step"] == defaults["step"]
        split_ab.apply("threshold", {"step": "7"})
        moved = dict(core._parallel_thresholds())
        assert moved["team"] == defaults["team"] and moved["step"] == 7
        split_ab.apply("threshold", {})
        assert dict(core._parallel_thresholds()) == defaults
        with pytest.raises(ValueError):
            split_ab.apply("threshold", {"no such site": "1"})
    finally:
        split_ab.apply("threshold", {})


def test_forced_paths_come_back():
    before = core._forced_paths()
    try:
        split_ab.apply("split", {"split": "team"})
        assert core._forced_paths() != before
        split_ab.apply("split", {})
        assert core._forced_paths() == before
    finally:
        core._force_paths()


def test_under_load_compares_beside_busy_processes(monkeypatch):
    seen = []

    @contextlib.contextmanager
    def busy(k):
        seen.append(("busy", k))
        yield
        seen.append(("stopped", k))

    monkeypatch.setattr(split_ab, "busy", busy)
    monkeypatch.setattr(split_ab, "compare", lambda a, settings: seen.append(("compare", a.rows)))
    monkeypatch.setattr(sys, "argv", ["split_ab.py", "--rows", "4", "--under-load", "2"])
    split_ab.main()
    assert seen == [("busy", 2), ("compare", "4"), ("stopped", 2)]
    seen.clear()
    monkeypatch.setattr(sys, "argv", ["split_ab.py", "--rows", "4"])
    split_ab.main()
    assert seen == [("busy", 0), ("compare", "4"), ("stopped", 0)]  # no busy processes


def test_no_load_starts_nothing_and_does_not_wait():
    import time

    from load import busy

    start = time.perf_counter()
    with busy(0) as load:
        assert load.processes == []
    assert time.perf_counter() - start < 0.25
    assert load.record()["spinners"] == []
