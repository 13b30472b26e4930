"""benchmarks/profile_rows.py: --force puts a path in force for the run and names it in the
table's title; a value the core does not know is refused before anything runs."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import profile_rows

import rnngraph as rg
from rnngraph._native import core


@pytest.fixture
def paths_and_threads_restored():
    threads = rg.get_num_threads()
    yield
    core._force_paths()
    rg.set_num_threads(threads)


def test_force_is_in_force_and_named(paths_and_threads_restored, capsys):
    profile_rows.main(["--rows", "8", "--threads", "1", "--reps", "1",
                       "--force", "split=team", "--force", "steps=units"])
    title = capsys.readouterr().out.splitlines()[0]
    assert title == "ms per call, 1 threads, split=team, steps=units"
    forced = core._forced_paths()
    assert forced["split"] == "team" and forced["steps"] == "units"


@pytest.mark.parametrize("setting", ["split=sideways", "no_such_path=team", "split"])
def test_unknown_force_is_refused(paths_and_threads_restored, capsys, setting):
    with pytest.raises(SystemExit) as exit_info:
        profile_rows.main(["--rows", "8", "--reps", "1", "--force", setting])
    assert exit_info.value.code == 2
    assert "--force" in capsys.readouterr().err
