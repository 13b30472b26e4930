"""One library measured in a process of its own (bench_rnn.py's default, isolated mode).

    python3 benchmarks/child.py '{"library": "torch", "threads": 2, "rows": [1, 2],
                                  "timing": {"budget_s": 0.25, "min_reps": 5, "settle_s": 0.1}}'

library: rnngraph, torch, onnxruntime, onednn (each row timed by the C++ driver of
onednn_peer.py, in a process of its own), rnngraph.torch (the PyTorch adapter, adapter.py), or
sgemm (the ceiling through rnngraph's OpenBLAS; with "dgemm": true also dgemm's). "model": "rnngraph" | "torch" times
adapter.model_step (a language-model training step) instead of rows.
A process imports only what its library needs: rnngraph's never loads torch or onnxruntime,
so their thread pools cannot exist there. "default_row1": true (rnngraph) first times row 1
with rnngraph's untouched default thread count. Each result is printed as it is done, one
line of PREFIX + JSON: {"kind": "row" | "default" | "ceiling" | "info" | "error", ...}; the
settle check (settle.py) is recorded before each measurement, without waiting (there is no
peer in this process to wait for).
"""

from __future__ import annotations

import functools
import gc
import json
import os
import sys
import time
from collections.abc import Callable

import settle
from records import add_gflops
from rows import BY_ID, Row
from timing import measure

PREFIX = "@@bench "
RowTimer = Callable[[Row], "dict | None"]
RECORD_ONLY = functools.partial(settle.settle, wait=False)
MODULES = ("rnngraph", "rnngraph.torch", "torch", "onnxruntime", "onnx")
VERSIONED = {"sgemm": ("rnngraph",), "rnngraph.torch": ("rnngraph", "torch")}


def emit(kind: str, **fields: object) -> None:
    """One result line for the parent (isolation.run_child)."""
    print(PREFIX + json.dumps({"kind": kind, **fields}), flush=True)


def _error(error: BaseException) -> dict:
    return {"error": f"{type(error).__name__}: {error}"}


def maker(library: str, threads: int) -> Callable[[Row], Callable | None]:
    """Import ``library``, set its thread count; return row -> step (None: no such step)."""
    if library == "rnngraph":
        import ours

        import rnngraph

        rnngraph.set_num_threads(threads)
        return ours.make_step
    import peers

    if library == "onnxruntime":
        return functools.partial(peers.ort_step, threads=threads)
    if library in ("torch", "rnngraph.torch"):
        import adapter
        import torch

        torch.set_num_interop_threads(1)
        torch.set_num_threads(threads)  # the adapter's rnngraph calls follow torch's count
        return peers.torch_step if library == "torch" else adapter.row_step
    raise ValueError(f"no such library {library!r}")


def step_timer(make: Callable[[Row], Callable | None], timing: dict) -> RowTimer:
    """row -> its entry: the step built outside timing (``make``), then measured."""
    def time_row(row: Row) -> dict | None:
        step = make(row)
        try:
            return None if step is None else measure(step, settle=RECORD_ONLY, **timing)
        finally:
            step = None
            gc.collect()

    return time_row


def row_timer(library: str, threads: int, timing: dict) -> RowTimer:
    """``library``'s row -> entry at ``threads``: oneDNN's C++ driver times a row itself (the
    same warm-up and repetitions), the Python libraries' steps are timed here."""
    if library == "onednn":
        import onednn_peer

        return functools.partial(onednn_peer.measure, threads=threads, timing=timing)
    return step_timer(maker(library, threads), timing)


def measure_row(time_row: RowTimer, row: Row) -> dict | None:
    """``row``'s entry with its GFLOP/s (None: the library has no such row); errors are
    recorded."""
    try:
        entry = time_row(row)
    except Exception as error:  # noqa: BLE001 (a failing row must not end the process)
        return _error(error)
    return None if entry is None else add_gflops({"entry": entry}, row)["entry"]


def info(library: str, started: float) -> dict:
    """What ran here: versions, thread pools, and which libraries this process imported."""
    import machine

    out: dict = {"pid": os.getpid(), "library": library, "settle_source": settle.source(),
                 "versions": machine.versions(VERSIONED.get(library, (library,))),
                 "seconds": time.perf_counter() - started}
    try:
        import threadpoolctl

        out["threadpool_info"] = threadpoolctl.threadpool_info()
    except ImportError:
        out["threadpool_info"] = None
    if library == "sgemm":
        from ceiling import blas_identity

        out["blas"] = blas_identity()
    if "torch" in sys.modules:
        out["torch_interop"] = sys.modules["torch"].get_num_interop_threads()
    if "rnngraph" in sys.modules:
        out["rnngraph_threads"] = sys.modules["rnngraph"].get_num_threads()
    out["imported"] = {m: m in sys.modules for m in MODULES}
    return out


def run(spec: dict) -> None:
    """Measure ``spec``'s rows (or the ceiling) and print the results."""
    started = time.perf_counter()
    library, threads = spec["library"], spec["threads"]
    timing = {k: v for k, v in spec["timing"].items() if k != "rounds"}  # one library: no turns
    if library == "sgemm":
        from ceiling import sgemm_ceiling

        emit("ceiling", ceiling=sgemm_ceiling(threads, budget_s=timing["budget_s"], min_reps=3,
                                              settle=RECORD_ONLY, dgemm=spec.get("dgemm", False)))
    else:
        if spec.get("default_row1"):  # before anything here sets rnngraph's thread count
            import ours

            import rnngraph

            used = rnngraph.get_num_threads()
            emit("default", entry=measure_row(step_timer(ours.make_step, timing), BY_ID[1]),
                 threads_used=used)
        time_row = row_timer(library, threads, timing)
        if spec.get("model"):
            import adapter

            step = adapter.model_step(spec["model"])
            emit("model", entry=measure(step, settle=RECORD_ONLY, **timing))
        for row_id in spec.get("rows", ()):
            emit("row", row=row_id, entry=measure_row(time_row, BY_ID[row_id]))
    emit("info", info=info(library, started))


def main(argv: list[str] | None = None) -> None:
    """Run the spec given as the one argument (JSON); end with the parent, should it die."""
    from script_child import die_with_parent

    die_with_parent()
    args = sys.argv[1:] if argv is None else argv
    try:
        run(json.loads(args[0]))
    except Exception as error:  # reported to the parent, then raised (a nonzero exit)
        emit("error", **_error(error))
        raise


if __name__ == "__main__":
    main()
