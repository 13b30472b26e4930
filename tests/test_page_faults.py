"""benchmarks/page_faults.py: a training row alone in a fresh process keeps its outputs and
scratch mapped between calls. Before outputs from 128 KiB up and the time loops' scratch
took rnngraph's kept blocks, row 8 (three 0.8 MB outputs) faulted 420-570 pages in on every
call (results/page-faults-2026-11-25.txt); now it takes a handful at most."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import page_faults
from script_child import run_json


def test_a_fresh_process_running_row_8_faults_no_pages_per_call():
    for threads in (1, 2):
        r = run_json(page_faults.__file__, ["--child", "8", str(threads), "--reps", "6"])
        assert r["row"] == 8 and r["threads"] == threads and r["median_ms"] > 0
        assert r["faults_per_call"] < 50, r
