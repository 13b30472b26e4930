"""benchmarks/target_headroom.py: what a speed-up target asks in each run's sgemm ceiling."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import target_headroom


def results_file(path: Path, cells: dict) -> Path:
    rows = [{"row": row, "threads": threads,
             "libs": {"rnngraph": {"median_ms": ours_ms, "fraction_of_ceiling": ours_f},
                      "torch": {"median_ms": peer_ms, "fraction_of_ceiling": peer_f}}}
            for (row, threads), (ours_ms, ours_f, peer_ms, peer_f) in cells.items()]
    rows.append({"row": 1, "threads": 8, "libs": {"rnngraph": {"median_ms": 1.0,
                                                               "fraction_of_ceiling": 0.5}}})
    path.write_text(json.dumps({"results": rows}))
    return path


def test_needed_fraction_and_unreachable_cells(tmp_path, capsys):
    a = results_file(tmp_path / "a.json", {(10, 8): (80.0, 0.6, 88.0, 0.55),
                                           (10, 16): (40.0, 0.8, 60.0, 0.5)})
    b = results_file(tmp_path / "b.json", {(10, 8): (79.0, 0.86, 77.0, 0.89)})
    assert target_headroom.fractions(a, "torch")[(10, 8)] == (0.6, 0.55, 1.1)
    target_headroom.main([str(a), str(b)])
    out = capsys.readouterr().out
    assert "| 10 | 8 | 60% / 55% -> 72% (1.10x) | 86% / 89% -> 116% **over 100 %** (0.97x) |" in out
    assert "| 10 | 16 | 80% / 50% -> 65% (1.50x) | - |" in out
    assert "| 1 |" not in out  # a cell without the peer
