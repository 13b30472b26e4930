"""PNG plots from results JSON files (bench_rnn.py's and scaling.py's).

    python3 benchmarks/plot.py [RESULTS.json] [--scaling SCALING.json]

Without arguments: the newest files in benchmarks/results/. PNGs go beside each JSON:
<stem>_speedup.png (rnngraph over each peer, per row, 2 and 1 threads), <stem>_ceiling.png
(fraction of the same-run sgemm ceiling, per row) and <stem>_scaling.png.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import matplotlib.ticker

if __name__ == "__main__":
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from report import latest, ours

PEER_NAMES = {"torch": "PyTorch", "onnxruntime": "ONNX Runtime"}
LIBRARY_NAMES = {"rnngraph": "rnngraph", **PEER_NAMES}
SPEEDUP_NAMES = {**PEER_NAMES, "onednn_published": "oneDNN 2.6 (published median, not this run)"}


def _by_threads(results: dict) -> dict:
    """{threads: [records]} for the numeric thread counts, most threads first."""
    out = {}
    for r in results["results"]:
        if isinstance(r["threads"], int):
            out.setdefault(r["threads"], []).append(r)
    return dict(sorted(out.items(), reverse=True))


def _bars(ax, records, series: dict, ylabel: str):
    """Grouped bars: one group per row, one bar per series {name: record -> value or None}."""
    x = np.arange(len(records))
    width = 0.8 / len(series)
    for k, (name, value) in enumerate(series.items()):
        ys = [value(r) for r in records]
        ax.bar(x + (k - (len(series) - 1) / 2) * width, [np.nan if y is None else y for y in ys],
               width, label=name)
    short = {"GRU resetAfter": "GRU", "GRU reset-before": "GRU r-b", "RNN tanh": "RNN"}
    labels = [f"{r['row']}\n{short.get(r['label'], r['label'])}"
              f"{' bi' * r['shape'].endswith('bi')}\n{r['mode']}" for r in records]
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_xlim(-0.5, len(records) - 0.5)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def speedup_figure(results: dict):
    groups = _by_threads(results)
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, 3.4 * len(groups)), squeeze=False)
    for ax, (threads, records) in zip(axes[:, 0], groups.items()):
        series = {f"over {name}": (lambda r, p=p: r["speedup"].get(p))
                  for p, name in SPEEDUP_NAMES.items()}
        _bars(ax, records, series, "speed-up (peer ms / rnngraph ms)")
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}×"))
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.axhline(1, color="k", lw=0.8)
        ax.set_title(f"rnngraph speed-up per row, {threads} thread{'s' * (threads > 1)} "
                     "(> 1: rnngraph faster)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def ceiling_figure(results: dict):
    groups = _by_threads(results)
    fig, axes = plt.subplots(len(groups), 1, figsize=(11, 3.4 * len(groups)), squeeze=False)
    for ax, (threads, records) in zip(axes[:, 0], groups.items()):
        def fraction(r, lib):
            entry = ours(r) if lib == "rnngraph" else r["libs"].get(lib, {})
            return entry.get("fraction_of_ceiling")

        _bars(ax, records, {name: (lambda r, lib=lib: fraction(r, lib))
                            for lib, name in LIBRARY_NAMES.items()}, "fraction of sgemm 2048³")
        gflops = results["ceiling"][str(threads)]["gflops"]
        ax.set_title(f"GFLOP/s as a fraction of the same-run sgemm ceiling ({gflops:.0f} GFLOP/s), "
                     f"{threads} thread{'s' * (threads > 1)}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def scaling_figure(data: dict):
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


def _save(fig, path: Path) -> Path:
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def save_results(results: dict, stem: Path) -> list[Path]:
    return [_save(speedup_figure(results), Path(f"{stem}_speedup.png")),
            _save(ceiling_figure(results), Path(f"{stem}_ceiling.png"))]


def save_scaling(data: dict, stem: Path) -> list[Path]:
    return [_save(scaling_figure(data), Path(f"{stem}_scaling.png"))]


def main(argv=None):
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
