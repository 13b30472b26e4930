"""The in-process mode (bench_rnn.py --in-process): every library in this one process, their
steps for a row timed in turns (timing.measure_interleaved).

PyTorch's, ONNX Runtime's and OpenBLAS's threads keep spinning after a call, so each
measurement here starts with the settle check (settle.py): the other threads of the process
must have used ~0 CPU time over a window (waiting up to settle.LIMIT_S); what they used is
recorded per measurement as settle_cpu_ms (and settle_cpu_ms_first, before any waiting).
oneDNN, a C++ driver that times itself in a process of its own, is left out of this mode.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any

import settle
from records import add_gflops, default_record, libraries_for, merge_ceiling, record
from rows import BY_ID, Row
from timing import measure_interleaved

CHECK = functools.partial(settle.settle, wait=True)


def library_step(library: str, row: Row, threads: int) -> Callable | None:
    """``library``'s training or inference step for ``row`` ("rnngraph", "torch" or
    "onnxruntime"), built in this process; None where the library has no such step."""
    import ours
    import peers

    if library == "rnngraph":
        return ours.make_step(row)
    if library == "torch":
        return peers.torch_step(row)
    return peers.ort_step(row, threads)


def measure_row(libraries: list[str], row: Row, threads: int, timing: dict) -> dict:
    """The libraries' steps for one row, built outside timing and measured in turns; a library
    that fails is recorded with its error."""
    steps, entries = {}, {}
    try:
        for library in libraries:
            try:
                step = library_step(library, row, threads)
            except Exception as error:  # noqa: BLE001 (a failing library must not end the run)
                entries[library] = {"error": f"{type(error).__name__}: {error}"}
                continue
            if step is not None:
                steps[library] = step
        try:
            entries.update(measure_interleaved(steps, settle=CHECK, **timing))
        except Exception as error:  # noqa: BLE001
            entries.update({lib: {"error": f"{type(error).__name__}: {error}"} for lib in steps})
    finally:
        steps.clear()
        gc.collect()
    return add_gflops(entries, row)


def measure(rows: list[Row], threads: list[int], timing: dict, bar: Any) -> dict:
    """Every library on ``rows`` at each thread count, in this process (the ceiling at the
    start and end of each count). Returns bench_rnn.py's {"results", "ceiling", ...}."""
    import machine
    import threadpoolctl
    import torch
    from ceiling import blas_identity, sgemm_ceiling

    import rnngraph

    default_threads = rnngraph.get_num_threads()  # before anything here changes it
    if torch.get_num_interop_threads() != 1:  # settable once (a second pass finds it set)
        torch.set_num_interop_threads(1)
    results, ceiling = [], {}
    dgemm = any(row.dtype == "float64" for row in rows)
    try:
        if BY_ID[1] in rows:  # row 1 with rnngraph's untouched default thread settings
            bar.set_description("row 1 rnngraph default threads")
            entry = measure_row(["rnngraph"], BY_ID[1], default_threads, timing).get("rnngraph")
            results.append(default_record(entry, default_threads))
            bar.update()
        for n in threads:
            bar.set_description(f"{n} thr sgemm ceiling")
            start = sgemm_ceiling(n, budget_s=timing["budget_s"], min_reps=3, settle=CHECK,
                                  dgemm=dgemm)
            bar.update()
            # After the ceiling (which sets only OpenBLAS's count): rnngraph keeps its own.
            rnngraph.set_num_threads(n)
            torch.set_num_threads(n)
            for row in rows:
                libraries = [lib for lib in libraries_for(row) if lib != "onednn"]
                bar.set_description(f"{n} thr row {row.id}")
                results.append(record(row, n, measure_row(libraries, row, n, timing)))
                bar.update(len(libraries))
            end = sgemm_ceiling(n, budget_s=timing["budget_s"], min_reps=3, settle=CHECK,
                                dgemm=dgemm)
            ceiling[str(n)] = merge_ceiling(start, end)
            bar.update()
    finally:
        rnngraph.set_num_threads(default_threads)
    return {"results": results, "ceiling": ceiling, "processes": [], "versions": machine.versions(),
            "infos": {"in-process": {"blas": blas_identity(), "rnngraph_threads": default_threads,
                                     "threadpool_info": threadpoolctl.threadpool_info(),
                                     "torch_interop": torch.get_num_interop_threads(),
                                     "settle_source": settle.source()}}}
