"""benchmarks/compare_runs.py: rnngraph's medians of two bench_rnn.py results files, cell by cell."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import compare_runs


def results_file(path: Path, cells: dict) -> Path:
    rows = [{"row": row, "threads": threads,
             "libs": {"rnngraph": {"median_ms": median, "min_ms": low},
                      "torch": {"median_ms": 1.0, "min_ms": 1.0}}}
            for (row, threads), (median, low) in cells.items()]
    path.write_text(json.dumps({"results": rows}))
    return path


def test_ratios_and_slower_cells(tmp_path, capsys):
    old = results_file(tmp_path / "old.json", {(1, 1): (2.0, 1.0), (7, 2): (10.0, 8.0)})
    new = results_file(tmp_path / "new.json", {(1, 1): (1.0, 1.0), (7, 2): (12.0, 8.0),
                                               (9, 1): (5.0, 5.0)})
    assert compare_runs.rnngraph_times(old) == {(1, "1"): (2.0, 1.0), (7, "2"): (10.0, 8.0)}
    compare_runs.main([str(old), str(new)])
    out = capsys.readouterr().out
    assert "| 1 | 1 | 2 (1) | 1 (1) | 0.50 | 1.00 |" in out
    assert "| 7 | 2 | 10 (8) | 12 (8) | 1.20 | 1.00 |" in out
    assert "| 9 |" not in out  # only cells both runs have
    assert out.rstrip().endswith("medians new / old 0.50-1.20 over 2 cells; "
                                 "slower by more than 3 %: row 7 at 2 (1.20)")


def test_per_ceiling_scales_each_ratio_by_its_own_ceiling(tmp_path, capsys):
    """Row 1 (float32) against the sgemm ceiling, row 16 (float64) against dgemm's; a cell
    whose thread count neither run's ceiling measured is left out."""
    def with_ceiling(path: Path, cells: dict, sgemm: float, dgemm: float) -> Path:
        results_file(path, cells)
        data = json.loads(path.read_text())
        data["ceiling"] = {"1": {"gflops": sgemm, "dgemm": {"gflops": dgemm}}}
        path.write_text(json.dumps(data))
        return path

    old = with_ceiling(tmp_path / "old.json", {(1, 1): (2.0, 2.0), (16, 1): (10.0, 10.0),
                                               (1, 2): (1.0, 1.0)}, 100.0, 50.0)
    new = with_ceiling(tmp_path / "new.json", {(1, 1): (2.2, 2.2), (16, 1): (10.0, 10.0),
                                               (1, 2): (1.0, 1.0)}, 90.0, 40.0)
    compare_runs.main([str(old), str(new), "--per-ceiling"])
    out = capsys.readouterr().out
    assert "| 1 | 1 | 2 (2) | 2.2 (2.2) | 1.10 | 1.10 | 0.99 |" in out  # 1.10 x 90 / 100
    assert "| 16 | 1 | 10 (10) | 10 (10) | 1.00 | 1.00 | 0.80 |" in out  # 1.00 x 40 / 50
    assert "| 1 | 2 |" not in out
    assert out.rstrip().endswith("medians new / old at the old ceiling 0.80-0.99 over 2 cells; "
                                 "slower by more than 3 %: none")
