"""oneDNN's RNN primitives as a benchmark peer: ``onednn/rnn_driver.cpp``, built here against
Debian's ``libdnnl-dev`` (``apt-get install libdnnl-dev``) and run in a process of its own at
the row's thread count (``OMP_NUM_THREADS``: Debian builds oneDNN on OpenMP).

oneDNN is a peer only: rnngraph never links it. Each benchmark row maps to one primitive:
LSTM -> ``lstm``, GRU resetAfter -> ``lbr_gru``, GRU reset-before -> ``gru``, RNN tanh ->
``vanilla_rnn``; infer rows time ``forward_inference``, train rows ``forward_training`` then
``backward`` with every gradient. oneDNN's RNNs are float32 (and bf16 / int8) only, so the
float64 rows have no oneDNN entry.

    python3 benchmarks/onednn_peer.py 7 --threads 2     # one row, printed as JSON
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from driver_process import SHARED_HEADER, build_if_stale, run_json
from rows import BY_ID, Row

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "onednn" / "rnn_driver.cpp"
BINARY = HERE / "build" / "rnn_driver"  # build/ is ignored by git
HEADER = Path("/usr/include/oneapi/dnnl/dnnl.hpp")
MISSING = "oneDNN is not installed: apt-get install libdnnl-dev (Debian's oneDNN 2.x)"
PRIMITIVES = {"LSTM": "lstm", "RNN": "rnn"}


def available() -> bool:
    """Whether the driver can be built here (oneDNN's headers are installed)."""
    return HEADER.exists()


def supports(row: Row) -> bool:
    """oneDNN has an RNN primitive of ``row``'s cell and data type."""
    return row.dtype == "float32"


def build() -> Path:
    """The driver's path, compiled first when missing or older than its source or the header
    the drivers share (driver_process.build_if_stale)."""
    if not available():
        raise RuntimeError(MISSING)
    return build_if_stale(BINARY, [SOURCE, SHARED_HEADER],
                          ["c++", "-O2", "-std=c++17", "-fopenmp", str(SOURCE), "-ldnnl"])


def primitive(cell: str, resetAfter: bool = True) -> str:
    """The driver's CELL for a row's cell ("LSTM", "GRU", "RNN")."""
    if cell == "GRU":
        return "lbr_gru" if resetAfter else "gru"
    return PRIMITIVES[cell]


def command(cell: str, T: int, N: int, I: int, H: int, bidirectional: bool, train: bool,
            timing: dict | None = None, io_dir: Path | None = None) -> list[str]:
    """The driver's command line: timed with ``timing`` (timing.measure's budget_s, min_reps,
    settle_s), or one untimed step on the tensors in ``io_dir``."""
    timing = timing or {"budget_s": 0, "min_reps": 1, "settle_s": 0}
    line = [str(build()), cell, *map(str, (T, N, I, H)), "bi" if bidirectional else "uni",
            "train" if train else "infer", str(timing["budget_s"]), str(timing["min_reps"]),
            str(timing["settle_s"])]
    return line + ([str(io_dir)] if io_dir is not None else [])


def run(line: list[str], threads: int, timeout_s: float | None = None,
        env: dict[str, str] | None = None) -> dict:
    """Run the driver on ``threads`` OpenMP threads, with ``env`` added to this process's
    environment (RNN_DRIVER_TIMES: where it writes every call's time); its JSON line."""
    return run_json(line, (env or {}) | {"OMP_NUM_THREADS": str(threads)}, timeout_s)


def measure(row: Row, threads: int, timing: dict) -> dict:
    """oneDNN's timing of ``row``: median_ms, min_ms, mean_ms, p90_ms, reps (timing.spread's
    fields, measured the same way in C++) and ``impl``, the implementations it chose."""
    if not supports(row):
        raise ValueError(f"oneDNN has no {row.dtype} RNN primitive")
    line = command(primitive(row.cell, row.resetAfter), row.T, row.N, row.I, row.H,
                   row.bidirectional, row.mode == "train", timing)
    return run(line, threads)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("row", type=int)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--budget", type=float, default=1.0)
    a = p.parse_args()
    timing = {"budget_s": a.budget, "min_reps": 10, "settle_s": 0.1}
    print(json.dumps(measure(BY_ID[a.row], a.threads, timing)))


if __name__ == "__main__":
    main()
