"""PNG plots from results JSON files (bench_rnn.py's and scaling.py's).

    python3 benchmarks/plot.py [RESULTS.json] [--scaling SCALING.json]

Without arguments: the newest files in benchmarks/results/. PNGs go beside each JSON:
<stem>_speedup.png (rnngraph over each peer, per row, at each thread count), <stem>_ceiling.png
(fraction of the same-run sgemm ceiling, per row) and <stem>_scaling.png. With more than one
thread count: <stem>_threads_speedup.png (each library's time at the fewest threads / time at
n, per row) and <stem>_threads_ceiling.png (fraction of the ceiling against threads, per row).
An --under-load run adds <stem>_load.png (loaded / idle per row and library).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import matplotlib
import matplotlib.ticker

if __name__ == "__main__":
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from report import latest, ours

PEER_NAMES = {"torch": "PyTorch", "onnxruntime": "ONNX Runtime", "onednn": "oneDNN"}
LIBRARY_NAMES = {"rnngraph": "rnngraph", **PEER_NAMES}
SPEEDUP_NAMES = {**PEER_NAMES, "onednn_published": "oneDNN 2.6 (published median, not this run)"}


def _entry(record: dict, lib: str) -> dict:
    """A library's entry in a record (rnngraph's under either of its names)."""
    return ours(record) if lib == "rnngraph" else record["libs"].get(lib) or {}


def _by_threads(results: dict) -> dict:
    """{threads: [records]} for the numeric thread counts, most threads first."""
    out = {}
    for r in results["results"]:
        if isinstance(r["threads"], int):
            out.setdefault(r["threads"], []).append(r)
    return dict(sorted(out.items(), reverse=True))


def _bars(ax: Axes, records: list, series: dict, ylabel: str) -> None:
    """Grouped bars: one group per row, one bar per series {name: record -> value or None}."""
    x = np.arange(len(records))
    width = 0.8 / len(series)
    for k, (name, value) in enumerate(series.items()):
        ys = [value(r) for r in records]
        ax.bar(x + (k - (len(series) - 1) / 2) * width, [np.nan if y is None else y for y in ys],
               width, label=name)
    short = {"GRU resetAfter": "GRU", "GRU reset-before": "GRU r-b", "RNN tanh": "RNN"}
    # One line per row, upright: side by side, the labels of 19 rows run into each other.
    labels = [f"{r['row']} {short.get(r['label'], r['label'])}"
              f"{' bi' * r['shape'].endswith('bi')} {r['mode']}" for r in records]
    ax.set_xticks(x, labels, fontsize=8, rotation=90)
    ax.set_xlim(-0.5, len(records) - 0.5)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def _log_ratios(ax: Axes) -> None:
    """A log y axis labelled 1×, 2×, 5×, 10× ..."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _outside_legend(ax: Axes) -> None:
    """The legend to the right of the axes, where it cannot cover a bar."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


def speedup_figure(results: dict) -> Figure:
    groups = _by_threads(results)
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, 4.9 * len(groups)), squeeze=False)
    for ax, (threads, records) in zip(axes[:, 0], groups.items()):
        series = {f"over {name}": (lambda r, p=p: r["speedup"].get(p))
                  for p, name in SPEEDUP_NAMES.items()}
        _bars(ax, records, series, "speed-up (peer ms / rnngraph ms)")
        _log_ratios(ax)
        ax.axhline(1, color="k", lw=0.8)
        ax.set_title(f"rnngraph speed-up per row, {threads} thread{'s' * (threads > 1)} "
                     "(> 1: rnngraph faster)")
        _outside_legend(ax)
    fig.tight_layout()
    return fig


def ceiling_figure(results: dict) -> Figure:
    groups = _by_threads(results)
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, 4.9 * len(groups)), squeeze=False)
    for ax, (threads, records) in zip(axes[:, 0], groups.items()):
        _bars(ax, records, {name: (lambda r, lib=lib: _entry(r, lib).get("fraction_of_ceiling"))
                            for lib, name in LIBRARY_NAMES.items()}, "fraction of sgemm 2048³")
        gflops = results["ceiling"].get(str(threads), {}).get("gflops", np.nan)
        ax.set_title(f"GFLOP/s as a fraction of the same-run sgemm ceiling ({gflops:.0f} GFLOP/s), "
                     f"{threads} thread{'s' * (threads > 1)}")
        _outside_legend(ax)
    fig.tight_layout()
    return fig


def _per_row_lines(results: dict, value: Callable, ylabel: str, title: str,
                   ideal: Callable | None = None) -> Figure:
    """One panel per row, x = threads (log 2), a line per library: value(records, lib, n)
    with records = {threads: record} of that row; ``ideal(n)``, where given, dashed."""
    threads = sorted(_by_threads(results))
    rows = {}
    for r in results["results"]:
        if isinstance(r["threads"], int):
            rows.setdefault(r["row"], {})[r["threads"]] = r
    cols = min(5, len(rows))
    grid = -(-len(rows) // cols)
    fig, axes = plt.subplots(grid, cols, figsize=(max(7.0, 3.2 * cols), 0.6 + 2.9 * grid),
                             squeeze=False)
    for ax in axes.flat[len(rows):]:
        ax.set_visible(False)
    for ax, (row, records) in zip(axes.flat, rows.items()):
        for lib, name in LIBRARY_NAMES.items():
            ys = [value(records, lib, n) for n in threads]
            if any(y is not None for y in ys):
                ax.plot(threads, [np.nan if y is None else y for y in ys], "o-", label=name)
        if ideal:
            ax.plot(threads, [ideal(n) for n in threads], "--", color="gray", lw=0.8,
                    label="linear")
        first = next(iter(records.values()))
        ax.set_xscale("log", base=2)
        ax.set_xticks(threads, [str(n) for n in threads])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_title(f"{row}: {first['label']} {first['mode']}\n{first['shape']}", fontsize=8)
        ax.set_xlabel("threads", fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.grid(alpha=0.3)
    handles = {h.get_label(): h for ax in axes.flat for h in ax.get_lines()}
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=len(handles),
               fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.5 / fig.get_figheight(), 1, 1))
    return fig


def threads_speedup_figure(results: dict) -> Figure:
    """Each library's median at the fewest threads over its median at n, per row."""
    base = min(_by_threads(results))

    def speedup(records: dict, lib: str, n: int) -> float | None:
        first, at = (_entry(records.get(t, {"libs": {}}), lib).get("median_ms") for t in (base, n))
        return first / at if first and at else None

    return _per_row_lines(results, speedup, f"time at {base} / time at n",
                          f"speed-up against threads (each library against itself at {base})",
                          ideal=lambda n: n / base)


def threads_ceiling_figure(results: dict) -> Figure:
    """GFLOP/s as a fraction of the same-run sgemm ceiling at each thread count, per row."""
    ceilings = ", ".join(f"{n}: {c['gflops']:.0f}" for n, c in results["ceiling"].items())

    def fraction(records: dict, lib: str, n: int) -> float | None:
        return _entry(records.get(n, {"libs": {}}), lib).get("fraction_of_ceiling")

    return _per_row_lines(results, fraction, "fraction of sgemm 2048³",
                          f"fraction of the same-run sgemm ceiling\n(sgemm GFLOP/s by threads: {ceilings})")


def load_figure(data: dict) -> Figure:
    """Loaded / idle median per row and library (one panel per thread count)."""
    load = data["under_load"]
    groups = {}
    for c in load["comparison"]:
        groups.setdefault(c["threads"], []).append(c)
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, 4.9 * len(groups)), squeeze=False)
    for ax, (threads, records) in zip(axes[:, 0], sorted(groups.items(), reverse=True)):
        _bars(ax, records, {name: (lambda c, lib=lib: c["libs"].get(lib, {}).get("ratio"))
                            for lib, name in LIBRARY_NAMES.items()}, "loaded / idle median")
        _log_ratios(ax)
        ax.axhline(1, color="k", lw=0.8)
        ax.axhline(load["ratio_limit"], color="k", lw=0.8, ls="--")
        ax.set_title(f"slow-down under {load['k']} busy processes, {threads} thread"
                     f"{'s' * (threads > 1)} (dashed: {load['ratio_limit']:g}×)")
        _outside_legend(ax)
    fig.tight_layout()
    return fig


def scaling_figure(data: dict) -> Figure:
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for col, axis in enumerate(("T", "N")):
        points = data["sweeps"][axis]
        x = np.array([p[axis] for p in points], float)
        fixed = "N = 32" if axis == "T" else "T = 50"
        for row, (key, label) in enumerate((("median_ms", "ms per train step"),
                                            ("peak_mb", "peak memory growth, MB"))):
            ax = axes[row, col]
            fit = data["fits"][f"{key} vs {axis}"]
            ax.plot(x, [p[key] for p in points], "o", label="measured" + " (median)" * (row == 0))
            if key == "median_ms":
                low = data["fits"][f"min_ms vs {axis}"]
                ax.plot(x, [p["min_ms"] for p in points], "x", color="gray", label="min")
                ax.plot(x, low["intercept"] + low["slope"] * x, ":", color="gray",
                        label=f"fit to min, R² = {low['r2']:.4f}")
            ax.plot(x, fit["intercept"] + fit["slope"] * x, "-",
                    label=f"{'fit to median' if row == 0 else 'linear fit'}, R² = {fit['r2']:.4f}")
            if key == "peak_mb":
                ax.plot(x, [p["outputs_and_saved_mb"] for p in points], "--", color="gray",
                        label="saved forward tensors + gradients")
            ax.set_xlabel(f"{axis} ({fixed}, H = I = 256)")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    threads = data["sweeps"]["T"][0]["threads"]
    fig.suptitle(f"rnngraph LSTM training step: scaling in T and N ({threads} thread"
                 f"{'s' * (threads > 1)})")
    fig.tight_layout()
    return fig


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def save_results(results: dict, stem: Path) -> list[Path]:
    """Every figure a bench_rnn.py JSON has data for, as <stem>_<name>.png."""
    figures = {"speedup": speedup_figure, "ceiling": ceiling_figure}
    if len(_by_threads(results)) > 1:
        figures |= {"threads_speedup": threads_speedup_figure,
                    "threads_ceiling": threads_ceiling_figure}
    if "under_load" in results:
        figures["load"] = load_figure
    return [_save(figure(results), Path(f"{stem}_{name}.png")) for name, figure in figures.items()]


def save_scaling(data: dict, stem: Path) -> list[Path]:
    return [_save(scaling_figure(data), Path(f"{stem}_scaling.png"))]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="plots from results JSON")
    p.add_argument("results", nargs="?", type=Path, help="bench_rnn.py JSON (default: newest)")
    p.add_argument("--scaling", type=Path, help="scaling.py JSON (default: newest)")
    a = p.parse_args(argv)
    results = a.results or latest()
    scaling = a.scaling or latest(scaling=True)
    written = []
    if results:
        written += save_results(json.loads(results.read_text()), results.with_suffix(""))
    if scaling:
        written += save_scaling(json.loads(scaling.read_text()), scaling.with_suffix(""))
    print("\n".join(map(str, written)) or "no results JSON found in benchmarks/results/")


if __name__ == "__main__":
    main()
