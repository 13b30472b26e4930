"""The isolated mode (bench_rnn.py's default): each library, at each thread count, in a fresh
process of its own (child.py), so no other library's thread pool exists where it is timed.

Per thread count, in order: the sgemm ceiling (and dgemm's, when float64 rows run), rnngraph,
ONNX Runtime, oneDNN, PyTorch, the ceiling again (each a process; oneDNN's child starts its
C++ driver, onednn_peer.py, a process per row). The parent only starts the processes and
collects their lines.

With ``processes`` above 1 each library runs that many processes at each thread count, the
libraries taking turns (rnngraph, ONNX Runtime, oneDNN, PyTorch, rnngraph, ...), and each row
keeps the entry of the process with the lowest median (its
"process_medians_ms" lists them all): the virtual machines measured here have slow spells
of seconds that move a median by up to half (an ad-hoc probe, row 1 on one thread of the
2-core machine, ten medians of 2000 calls in a row in one process: 76, 64, 76, 75, 76, 76,
70, 73, 53, 53 µs; on the 16-core machine, machine16-infer-sweep-2026-11-29 and
machine16-small-1thread-avx512-2026-11-29 (not committed): ONNX Runtime's row 1 medians
from 0.065 to 0.12 ms from one thread count's process to the next), and a slow spell only
ever adds time. The turns put every library's processes across the same stretch of the run,
so a spell of seconds meets them alike (with the processes of one library in a row, a spell
could cover all of them: on the 16-core machine, in machine16-infer-2-4-8-661147c-2026-12-01,
row 5 at 4 threads gave rnngraph's three processes 7.25, 9.01 and 7.00 ms, one after another,
where alternating processes of the same build in the next minutes gave 4.25-4.96 ms,
machine16-idle-moves-ab-661147c-2026-12-01.txt). The default thread count's row 1 is timed in
the first process only.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from child import PREFIX
from records import LIBRARIES, default_record, libraries_for, merge_ceiling, record
from rows import BY_ID, Row

CHILD = Path(__file__).resolve().with_name("child.py")


def _read_lines(stream: Any, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def run_child(spec: dict, timeout_s: float, bar: Any) -> tuple[list[dict], dict]:
    """Run child.py with ``spec``; its result lines (each advancing ``bar``) and how it ran.
    A child past ``timeout_s`` is killed; what it printed before still counts."""
    started = time.perf_counter()
    lines: queue.Queue = queue.Queue()
    messages, timed_out = [], False
    with tempfile.TemporaryFile(mode="w+") as stderr:
        process = subprocess.Popen([sys.executable, str(CHILD), json.dumps(spec)],
                                   stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL,
                                   text=True)
        try:
            threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True).start()
            while True:
                try:
                    line = lines.get(timeout=max(0.01, started + timeout_s - time.perf_counter()))
                except queue.Empty:
                    timed_out = True
                    break
                if line is None:
                    break
                if line.startswith(PREFIX):
                    messages.append(json.loads(line[len(PREFIX):]))
                    if messages[-1]["kind"] in ("row", "default", "ceiling", "model"):
                        bar.update()
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
        stderr.seek(0)
        errors = stderr.read()
    how = {"library": spec["library"], "threads": spec["threads"], "pid": process.pid,
           "returncode": process.returncode, "timed_out": timed_out, "limit_s": timeout_s,
           "wall_s": time.perf_counter() - started}
    if process.returncode or timed_out:
        how["stderr_tail"] = errors[-2000:]
    return messages, how


def _failure(how: dict) -> dict:
    if how["timed_out"]:
        return {"error": f"process stopped at its time limit ({how['limit_s']:.0f} s)"}
    return {"error": f"process exited with {how['returncode']}: "
                     f"{(how.get('stderr_tail') or '').strip()[-300:]}"}


def _ceiling(threads: int, timing: dict, timeout_s: float, bar: Any, out: dict,
             dgemm: bool) -> dict:
    bar.set_description(f"{threads} thr sgemm ceiling")
    messages, how = run_child({"library": "sgemm", "threads": threads, "timing": timing,
                               "dgemm": dgemm}, timeout_s, bar)
    _collect(messages, how, out)
    found = [m["ceiling"] for m in messages if m["kind"] == "ceiling"]
    if not found:
        bar.update()
    return found[0] if found else _failure(how)


def _collect(messages: list, how: dict, out: dict) -> None:
    """The process's own record (info line) into ``out``."""
    info = next((m["info"] for m in messages if m["kind"] == "info"), {})
    how["imported"] = info.get("imported")
    how["seconds_in_child"] = info.get("seconds")
    errors = [m["error"] for m in messages if m["kind"] == "error"]
    if errors:
        how["error"] = errors[0]
    out["processes"].append(how)
    if info:
        out["versions"] |= info["versions"]
        out["infos"].setdefault(info["library"], info)


def lowest_median(entries: list[dict | None]) -> dict | None:
    """The entry with the lowest median (None, and entries without one, left out), or None:
    a slow spell of the machine only ever adds time (module docstring)."""
    timed = [e for e in entries if e and "median_ms" in e]
    return min(timed, key=lambda e: e["median_ms"]) if timed else None


def _fastest(entries: list[dict], processes: int) -> dict | None:
    """The entry with the lowest median of one row's ``processes`` processes (else the first
    entry, an error, or None); with more than one process, listing every median and how many
    processes there were."""
    best = lowest_median(entries)
    if best is None:
        return entries[0] if entries else None
    if processes == 1:
        return best
    return {**best, "process_medians_ms": [e["median_ms"] for e in entries if "median_ms" in e],
            "processes": processes}


def measure(rows: list[Row], threads: list[int], timing: dict, bar: Any,
            timeout_s: float = 600.0, deadline: float = float("inf"), processes: int = 1) -> dict:
    """Every library on ``rows`` at each thread count, each (library, threads) ``processes``
    processes (the module docstring), each given at most ``timeout_s`` and stopped at
    ``deadline`` (time.perf_counter's clock).
    Returns {"results", "ceiling", "processes", "versions", "infos"}."""
    out: dict = {"results": [], "ceiling": {}, "processes": [], "versions": {}, "infos": {}}

    def limit() -> float:
        return max(0.0, min(timeout_s, deadline - time.perf_counter()))

    default_wanted = BY_ID[1] in rows
    dgemm = any(row.dtype == "float64" for row in rows)
    for n in threads:
        start = _ceiling(n, timing, limit(), bar, out, dgemm)
        entries: dict = {row.id: {} for row in rows}
        wanted = {library: mine for library in LIBRARIES
                  if (mine := [row.id for row in rows if library in libraries_for(row)])}
        # whether the library's first process also times the default thread count's row 1
        default_of = {library: library == "rnngraph" and default_wanted for library in wanted}
        tried: dict[str, list] = {library: [] for library in wanted}  # (messages, how) each
        for attempt in range(processes):  # the libraries in turns (the module docstring)
            for library, mine in wanted.items():
                bar.set_description(f"{n} thr {library}")
                spec = {"library": library, "threads": n, "rows": mine, "timing": timing,
                        "default_row1": default_of[library] and attempt == 0}
                messages, how = run_child(spec, limit(), bar)
                _collect(messages, how, out)
                tried[library].append((messages, how))
        for library, mine in wanted.items():
            default, attempts = default_of[library], tried[library]
            answers = [m for messages, _ in attempts for m in messages if m["kind"] == "row"]
            for row_id in mine:
                given = [m["entry"] for m in answers if m["row"] == row_id]
                if not given:  # every process left it out: the first one's failure says why
                    entries[row_id][library] = _failure(next(
                        how for messages, how in attempts
                        if not any(m["kind"] == "row" and m["row"] == row_id for m in messages)))
                elif best := _fastest([e for e in given if e is not None], processes):
                    entries[row_id][library] = best  # (None only: a row the library lacks)
            if default:
                messages, how = attempts[0]
                found = [m for m in messages if m["kind"] == "default"]
                out["results"].insert(0, default_record(found[0]["entry"], found[0]["threads_used"])
                                      if found else default_record(_failure(how), None))
                bar.update(not found)
                default_wanted = False
            bar.update(processes * len(mine) - len(answers))
        end = _ceiling(n, timing, limit(), bar, out, dgemm)
        ceiling = merge_ceiling(start, end)
        if "gflops" in ceiling:
            out["ceiling"][str(n)] = ceiling
        else:
            out.setdefault("ceiling_errors", {})[str(n)] = [start, end]
        out["results"] += [record(row, n, entries[row.id]) for row in rows]
    return out
