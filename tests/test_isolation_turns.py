"""benchmarks/isolation.py: with several processes per library, the libraries take turns, and
each row keeps its lowest median across a library's processes."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import isolation
from rows import BY_ID


class Bar:
    def update(self, n=1):
        pass

    def set_description(self, text):
        pass


def test_libraries_take_turns_and_rows_keep_their_lowest_median(monkeypatch):
    started = []  # (library, threads, default_row1) of each process, in order
    medians = {"rnngraph": [0.9, 0.5, 0.7], "onnxruntime": [0.6, 0.8, 0.4],
               "onednn": [1.0, 1.1, 1.2], "torch": [2.0, 3.0, 1.5]}

    def fake_child(spec, timeout_s, bar):
        library = spec["library"]
        how = {"library": library, "threads": spec["threads"], "returncode": 0,
               "timed_out": False, "limit_s": timeout_s}
        if library == "sgemm":
            return [{"kind": "ceiling", "ceiling": {"gflops": 100.0}}], how
        started.append((library, spec["threads"], spec["default_row1"]))
        median = medians[library][sum(1 for s in started if s[0] == library) - 1]
        messages = [{"kind": "row", "row": row, "entry": {"median_ms": median, "min_ms": median}}
                    for row in spec["rows"]]
        if spec["default_row1"]:
            messages.append({"kind": "default", "entry": {"median_ms": 0.3}, "threads_used": 2})
        return messages, how

    monkeypatch.setattr(isolation, "run_child", fake_child)
    monkeypatch.setattr(isolation, "libraries_for",
                        lambda row: ["rnngraph", "onnxruntime", "onednn", "torch"])
    out = isolation.measure([BY_ID[1], BY_ID[2]], [2], {}, Bar(), processes=3)

    turn = [("rnngraph", 2), ("onnxruntime", 2), ("onednn", 2), ("torch", 2)]
    assert [(library, n) for library, n, _ in started] == turn * 3
    # the default thread count's row 1: the first rnngraph process only
    assert [default for library, _, default in started if library == "rnngraph"] == [
        True, False, False]
    default, *cells = out["results"]
    assert default["libs"]["rnngraph (default threads)"]["median_ms"] == 0.3
    assert [c["row"] for c in cells] == [1, 2]
    for cell in cells:
        libs = cell["libs"]
        assert libs["rnngraph"]["median_ms"] == 0.5
        assert libs["onnxruntime"]["median_ms"] == 0.4
        assert libs["onednn"]["median_ms"] == 1.0
        assert libs["torch"]["median_ms"] == 1.5
        assert libs["rnngraph"]["process_medians_ms"] == [0.9, 0.5, 0.7]
