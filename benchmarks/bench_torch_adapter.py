"""rnngraph's PyTorch adapter against the same computation through rnngraph.Graph and against
torch.nn, on the training rows of docs/BENCHMARKS.md, plus a language-model training step in
which torch's own layers run between rnngraph's calls.

    python3 benchmarks/bench_torch_adapter.py                    # rows 7-14, 1 and 2 threads
    python3 benchmarks/bench_torch_adapter.py --rows 8 --threads 2 --repeat 1 --budget 1
                                              [--pools torch] [--no-model]

Every (library, thread count) runs in a process of its own (child.py): "rnngraph" (Graph:
ours.make_step), "rnngraph.torch" (adapter.row_step: forward, then output.backward(dy) with
every gradient; once per --pools entry: on torch's OpenMP threads and on rnngraph's own
workers) and "torch" (peers.torch_step, the same step with torch.nn). The sequence runs
--repeat times (the library processes of each thread count every other time in reverse
order; the sgemm ceiling's process, the thread counts and the model steps keep theirs); each
library's figure is its lowest median over the repeats (isolation.lowest_median: a shared
machine's slow spells only ever add time). "paired" is the median, over the repeats, of the
adapter's median over the Graph's in the same repeat (minutes apart at most, so a slow spell
longer than that falls on both), with the lowest and highest of them. Unless --no-model, the
model step (adapter.model_step) runs with the default OpenMP wait policy and with
OMP_WAIT_POLICY=PASSIVE (torch's threads then sleep at once after each of its layers instead
of spinning on the cores rnngraph's call needs).
Writes JSON and a Markdown table to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

import machine
import progress
from isolation import lowest_median, run_child
from rows import BY_ID, parse_rows

MODEL_LIBRARIES = {"rnngraph": "rnngraph.torch", "torch": "torch"}  # model recurrent -> process
RESULTS = Path(__file__).resolve().parent / "results"


@contextlib.contextmanager
def environment(**values: str):
    """Variables set for the children started inside the block."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def processes(pools: list[str]) -> list[tuple[str, str, dict]]:
    """(result name, child library, environment) of each measured configuration: the adapter
    once per thread pool (rnngraph.torch's set_thread_pool, via RNNGRAPH_TORCH_POOL)."""
    out = [("rnngraph", "rnngraph", {})]
    out += [(f"rnngraph.torch ({pool} pool)", "rnngraph.torch", {"RNNGRAPH_TORCH_POOL": pool})
            for pool in pools]
    return [*out, ("torch", "torch", {})]


def measure(rows: list[int], threads: list[int], timing: dict, repeat: int,
            pools: list[str], model: bool = True) -> dict:
    configurations = processes(pools)
    bar = progress.bar(repeat * len(threads) * (len(rows) * len(configurations) + 1
                                                + (2 * (len(pools) + 1) if model else 0)))
    found: dict = {}
    ceilings: dict = {}
    for i in range(repeat):
        for n in threads:
            messages, _how = run_child({"library": "sgemm", "threads": n, "timing": timing},
                                       600, bar)
            ceilings.setdefault(n, []).extend(m["ceiling"] for m in messages
                                              if m["kind"] == "ceiling")
            for name, library, env in configurations[::-1] if i % 2 else configurations:
                spec = {"library": library, "threads": n, "rows": rows, "timing": timing}
                with environment(**env):
                    for m in run_child(spec, 900, bar)[0]:
                        if m["kind"] == "row":
                            found.setdefault((m["row"], n, name), {})[i] = m["entry"]
            models = [("torch.nn LSTM", "torch", {})] + [
                (f"rnngraph LSTM ({pool} pool)", "rnngraph", {"RNNGRAPH_TORCH_POOL": pool})
                for pool in pools]
            for policy in ("default", "PASSIVE") if model else ():
                for name, recurrent, env in models:
                    library = MODEL_LIBRARIES[recurrent]
                    spec = {"library": library, "threads": n, "model": recurrent, "timing": timing}
                    wait = {"OMP_WAIT_POLICY": policy} if policy != "default" else {}
                    with environment(**env, **wait):
                        for m in run_child(spec, 600, bar)[0]:
                            if m["kind"] == "model":
                                key = ("model", n, f"{name}, OMP wait {policy}")
                                found.setdefault(key, {})[i] = m["entry"]
    bar.close()
    # Each configuration's entries by repeat (None where its process gave none), so that the
    # paired figure pairs the same repeat's processes.
    results = []
    for (row, n, library), by_repeat in found.items():
        entries = [by_repeat.get(i) for i in range(repeat)]
        results.append({"row": row, "threads": n, "library": library,
                        **(lowest_median(entries) or {"error": str(entries)}),
                        "repeats": entries})
    ceiling = {n: max((c.get("gflops", 0) for c in cs), default=None) for n, cs in ceilings.items()}
    return {"results": results, "ceiling_gflops": ceiling}


def paired(ours: list[dict | None], graph: list[dict | None]) -> str:
    """The median over repeats of ours / graph in the same repeat, − 1, with its range; the
    repeats where either has no median are left out."""
    ratios = sorted(a["median_ms"] / b["median_ms"] for a, b in zip(ours, graph)
                    if a and b and "median_ms" in a and "median_ms" in b)
    if not ratios:
        return "–"
    middle = statistics.median(ratios)
    return (f"{(middle - 1) * 100:+.1f} % ({(ratios[0] - 1) * 100:+.1f} to "
            f"{(ratios[-1] - 1) * 100:+.1f})")


def table(out: dict) -> str:
    at = {(r["row"], r["threads"], r["library"]): r.get("median_ms") for r in out["results"]}
    repeats = {(r["row"], r["threads"], r["library"]): r.get("repeats", [])
               for r in out["results"]}
    header = ("| row | threads | Graph ms | adapter ms | torch.nn ms | adapter over Graph | "
              "paired | torch.nn / adapter | pool |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    for row in out["rows"]:
        for n in out["threads"]:
            for pool in out["pools"]:
                graph, ours, theirs = (at.get((row, n, lib)) for lib in (
                    "rnngraph", f"rnngraph.torch ({pool} pool)", "torch"))
                over = f"{(ours / graph - 1) * 100:+.1f} %" if graph and ours else "–"
                pair = paired(repeats.get((row, n, f"rnngraph.torch ({pool} pool)"), []),
                              repeats.get((row, n, "rnngraph"), []))
                speed = f"{theirs / ours:.2f}×" if theirs and ours else "–"
                cells = [f"{v:.2f}" if v else "–" for v in (graph, ours, theirs)]
                lines.append(f"| {row} {BY_ID[row].label} | {n} | {' | '.join(cells)} | {over} "
                             f"| {pair} | {speed} | {pool} |")
    title = ("Language-model training step (embedding, LSTM, linear head, cross-entropy, SGD), "
             "median ms:")
    models = sorted((r for r in out["results"] if r["row"] == "model"),
                    key=lambda r: (r["threads"], r["library"]))
    if models:
        lines += ["", title, "", "| threads | model | ms |", "|---|---|---|"]
    for r in models:
        ms = r.get("median_ms", float("nan"))
        lines.append(f"| {r['threads']} | {r['library']} | {ms:.2f} |")
    lines.append("")
    lines.append(f"ms: each library's lowest median over {out['repeat']} processes. adapter over "
                 "Graph: of those; paired: the median (lowest to highest) over the repeats of "
                 "the adapter's median over the Graph's in the same repeat.")
    lines.append("")
    lines.append("sgemm 2048³ ceiling (same run), GFLOP/s: " + ", ".join(
        f"{n} thr {g:.0f}" for n, g in out["ceiling_gflops"].items() if g))
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="7-14")
    p.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    p.add_argument("--budget", type=float, default=2.0, help="seconds of repetitions per step")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--pools", nargs="+", default=["torch", "rnngraph"],
                   help="the adapter's thread pools to measure (rnngraph.torch.set_thread_pool)")
    p.add_argument("--no-model", action="store_true", help="leave out the model step")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    rows = [row.id for row in parse_rows(args.rows)]
    timing = {"budget_s": args.budget, "min_reps": 10, "settle_s": 0.2}
    started = time.perf_counter()
    out = {"command": ["benchmarks/bench_torch_adapter.py", *sys.argv[1:]],
           "machine": machine.cpu(), "rows": rows, "threads": args.threads, "timing": timing,
           "repeat": args.repeat, "pools": args.pools,
           **measure(rows, args.threads, timing, args.repeat, args.pools, not args.no_model)}
    out["wall_s"] = time.perf_counter() - started
    path = args.out or RESULTS / f"torch-adapter-{time.strftime('%Y-%m-%dT%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=1))
    text = table(out)
    path.with_suffix(".md").write_text(text + "\n")
    print(text)
    print(f"wrote {path} ({out['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
