"""The results records of bench_rnn.py, whichever mode measured them, and what is derived
from them (GFLOP/s, fractions of the same-run ceiling, speed-ups over the peers)."""

from __future__ import annotations

import onednn_peer
from report import PEERS
from report import ours as ours_entry
from rows import BY_ID, Row

LIBRARIES = ("rnngraph", "onnxruntime", "onednn", "torch")  # PyTorch, the slowest under load, last
DEFAULT_ENTRY = "rnngraph (default threads)"


def libraries_for(row: Row) -> list[str]:
    """The libraries measured on ``row``: ONNX Runtime on infer rows, oneDNN on float32 rows
    where its headers are installed (onednn_peer.available)."""
    return [lib for lib in LIBRARIES
            if (lib != "onnxruntime" or row.mode == "infer")
            and (lib != "onednn" or (onednn_peer.available() and onednn_peer.supports(row)))]


def ceiling_gflops(ceiling: dict, row_record: dict, threads: object) -> float | None:
    """The same-run ceiling of a record's data type at ``threads``: sgemm for float32 rows,
    dgemm for float64 rows."""
    at = ceiling.get(str(threads), {})
    if BY_ID[row_record["row"]].dtype == "float64":
        at = at.get("dgemm", {})
    return at.get("gflops")


def add_gflops(entries: dict, row: Row) -> dict:
    """GFLOP/s (the oneDNN FLOP count over the median) into each measured entry."""
    for entry in entries.values():
        if "median_ms" in entry:
            entry["gflops"] = row.flop() / entry["median_ms"] / 1e6
    return entries


def record(row: Row, threads: int | str, libs: dict) -> dict:
    """One row at one thread count: every library's entry."""
    return {"row": row.id, "label": row.label, "shape": row.shape, "mode": row.mode,
            "threads": threads, "flop": row.flop(), "onednn_ms": row.onednn_ms, "libs": libs}


def default_record(entry: dict, threads_used: int) -> dict:
    """Row 1 measured with rnngraph's untouched default thread settings."""
    return {**record(BY_ID[1], "default", {DEFAULT_ENTRY: entry}), "threads_used": threads_used}


def derive(results: list, ceiling: dict) -> None:
    """Speed-ups (peer median / rnngraph median) and fractions of the same-run ceiling; the
    published oneDNN median (docs/BENCHMARKS.md, another run) is added as context."""
    at = {(r["row"], r["threads"]): r for r in results}
    for r in results:
        threads = r.get("threads_used", r["threads"])
        peer_record = at.get((r["row"], threads), r)
        top = ceiling_gflops(ceiling, r, threads)
        if top:
            for entry in r["libs"].values():
                if "gflops" in entry:
                    entry["fraction_of_ceiling"] = entry["gflops"] / top
        mine = ours_entry(r)
        r["speedup"] = {
            peer: entry["median_ms"] / mine["median_ms"]
            for peer, entry in peer_record["libs"].items()
            if peer in PEERS and "median_ms" in entry and "median_ms" in mine}
        published = BY_ID[r["row"]].onednn(threads)
        if published and "median_ms" in mine:
            r["speedup"]["onednn_published"] = published / mine["median_ms"]


def merge_ceiling(start: dict, end: dict) -> dict:
    """The ceiling of a thread count: the faster of its start and end measurements (and the
    same for the dgemm ceiling, where measured)."""
    merged = max(start, end, key=lambda c: c.get("gflops", 0)) | {
        "start_gflops": start.get("gflops"), "end_gflops": end.get("gflops")}
    if "dgemm" in start or "dgemm" in end:
        merged["dgemm"] = merge_ceiling(start.get("dgemm", {}), end.get("dgemm", {}))
    return merged
