"""Markdown table of a results JSON (printed by bench_rnn.py, shown by the notebook)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
PEERS = {"torch": "PyTorch", "onnxruntime": "ORT", "onednn": "oneDNN"}
LIBRARY_NAMES = {"rnngraph": "rnngraph", **PEERS}


def ours(record: dict) -> dict:
    """rnngraph's measurement in a record (the 'default threads' entry has its own name)."""
    return record["libs"].get("rnngraph") or record["libs"].get("rnngraph (default threads)") or {}


def latest(scaling: bool = False, folder: Path = RESULTS):
    """The newest bench_rnn.py (or scaling.py) JSON in ``folder`` by its recorded date."""
    def key(path):
        try:
            return json.loads(path.read_text())["meta"]["date"], path.stat().st_mtime
        except (KeyError, ValueError):
            return "", path.stat().st_mtime
    files = list(folder.glob("scaling-*.json" if scaling else "run-*.json"))
    return max(files, key=key, default=None)


def _ms(entry) -> str:
    if not entry:
        return "–"
    if "error" in entry:
        return "error"
    return f"{entry['median_ms']:.3g} ({entry['min_ms']:.3g})"


def _num(value) -> str:
    return "–" if value is None else f"{value:.3g}"


def _x(value) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _yes(value) -> str:
    return "–" if value is None else "yes" if value else "**no**"


def load_table(data: dict) -> str:
    """The idle-vs-loaded tables of a bench_rnn.py --under-load JSON."""
    load, meta = data["under_load"], data["meta"]
    lines = [("| # | row | threads | library | idle ms | loaded ms | loaded / idle "
              "| loaded mean ms | loaded p90 ms |"),
             "|---|---|---|---|---|---|---|---|---|"]
    for c in load["comparison"]:
        for lib, v in c["libs"].items():
            lines.append(f"| {c['row']} | {c['label']} {c['shape']} | {c['threads']} "
                         f"| {LIBRARY_NAMES[lib]} | {_num(v['idle_ms'])} | {_num(v['loaded_ms'])} "
                         f"| {_x(v['ratio'])} | {_num(v.get('loaded_mean_ms'))} "
                         f"| {_num(v.get('loaded_p90_ms'))} |")
    limit = load["ratio_limit"]
    lines += ["", (f"| # | row | threads | rnngraph loaded / idle | ≤ {limit:g}× idle "
                   "| rnngraph loaded ms | best peer loaded ms | ≤ best peer "
                   "| mean ≤ best peer's |"),
              "|---|---|---|---|---|---|---|---|---|"]
    for c in load["comparison"]:
        mine = c["libs"].get("rnngraph", {})
        best = (f"{_num(c['best_peer_loaded_ms'])} ({LIBRARY_NAMES[c['best_peer']]})"
                if c["best_peer"] else "no peer")
        lines.append(f"| {c['row']} | {c['label']} {c['shape']} | {c['threads']} "
                     f"| {_x(mine.get('ratio'))} | {_yes(c['rnngraph_within_limit'])} "
                     f"| {_num(mine.get('loaded_ms'))} | {best} "
                     f"| {_yes(c['rnngraph_le_best_peer'])} "
                     f"| {_yes(c.get('rnngraph_mean_le_best_peer'))} |")

    def tally(key: str) -> str:
        found = [c[key] for c in load["comparison"] if c.get(key) is not None]
        return f"{sum(found)} of {len(found)}"

    average = load.get("load_average_loaded_end") or [float("nan")]
    where = ("all libraries in one process" if meta.get("mode") == "in-process"
             else "each library in its own process")
    lines += ["", (f"Under load: {load['k']} busy process{'es' * (load['k'] != 1)} (`while True: "
                   f"pass`) on {meta['machine']['usable_cpus']} CPUs, load average "
                   f"{average[0]:.2f} at the end of the loaded phase; ms: medians, {where}. "
                   f"rnngraph loaded ≤ {limit:g}× idle on {tally('rnngraph_within_limit')}; "
                   f"≤ the best peer loaded on {tally('rnngraph_le_best_peer')} by median, "
                   f"on {tally('rnngraph_mean_le_best_peer')} by mean.")]
    return "\n".join(lines)


def table(results: dict) -> str:
    lines = [
        ("| # | row | mode | threads | rnngraph ms | PyTorch ms | ORT ms | oneDNN ms | vs PyTorch "
         "| vs ORT | vs oneDNN | rnngraph GFLOP/s | of ceiling |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results["results"]:
        mine = ours(r)
        threads = r["threads"] if r["threads"] != "default" else f"default ({r['threads_used']})"
        gflops = f"{mine['gflops']:.1f}" if "gflops" in mine else "–"
        fraction = mine.get("fraction_of_ceiling")
        fraction = "–" if fraction is None else f"{fraction:.0%}"
        peers = [_ms(r["libs"].get(peer)) for peer in PEERS]
        ratios = [_x(r["speedup"].get(peer)) for peer in PEERS]
        lines.append(
            f"| {r['row']} | {r['label']} {r['shape']} | {r['mode']} | {threads} | {_ms(mine)} "
            f"| {' | '.join(peers)} | {' | '.join(ratios)} | {gflops} | {fraction} |")
    ceilings = ", ".join(f"{n} thr {c['gflops']:.0f} GFLOP/s" + (
        f" (dgemm {c['dgemm']['gflops']:.0f})" if "gflops" in c.get("dgemm", {}) else "")
        for n, c in results["ceiling"].items()) or "not measured"
    meta = results["meta"]
    processes = meta.get("timing", {}).get("processes_per_library", 1)
    best_of = (f" Each cell: the lowest of {processes} processes' medians (the default thread "
               "count's row 1: one process)." if processes > 1 else "")
    lines += [
        "",
        ("ms: median (min). vs X: X's median / rnngraph's median (> 1: rnngraph is faster). "
         "GFLOP/s: the oneDNN FLOP count (forward 2·G·H·N·(I+H)·T per direction, train 3×) over "
         "the median. of ceiling: of the same run's 2048³ sgemm (dgemm for float64 rows), "
         f"{meta['versions']['rnngraph_blas']['core']} core: {ceilings}.{best_of}"),
        (f"{meta['machine']['model']}, {meta['machine']['usable_cpus']} CPUs; load average "
         f"{meta['load_average_start'][0]:.2f} at start, {meta['load_average_end'][0]:.2f} at end; "
         f"commit {(meta['git']['commit'] or '?')[:10]}{' (dirty)' * bool(meta['git']['dirty'])}; "
         f"{meta['date']}."),
    ]
    others = [f"{o['name']} ({o['cpus']:.1f} CPUs, {when})"
              for when, found in meta.get("other_busy_processes", {}).items() for o in found]
    if others:
        lines.append("Other busy processes on the machine: " + ", ".join(others) + ".")
    lines += [f"Error: row {r['row']}, {r['threads']} threads, {lib}: {entry['error']}"
              for r in results["results"] for lib, entry in r["libs"].items() if "error" in entry]
    return "\n".join(lines)


if __name__ == "__main__":
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else latest()
    data = json.loads(path.read_text())
    print(table(data))
    if "under_load" in data:
        print("\n" + load_table(data))
