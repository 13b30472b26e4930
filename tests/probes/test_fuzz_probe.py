"""Fuzz both layers with random bad and edge inputs, each case in a child process.

Specs come from Hypothesis strategies (probe_fuzz_strategies), derandomized: the same cases
on every run. They cover builds and runs of the six ops through ``rnngraph.Graph`` (wrong
shapes and ranks, every dtype kind, non-contiguous, read-only, negative-stride, misaligned
and broadcast arrays, NaN and inf, empty T or N, sizes that cannot be allocated, mismatched
descriptors, None and non-array objects, bad run() arguments) and straight calls of the
compiled module (rnn_forward, rnn_gradients, pack_forward_weights and the options classes).

probe_pool runs them in child processes, so a crash or a hang is reported with the case that
caused it. Every outcome must be a success with sane outputs or a ValueError, TypeError or
MemoryError naming the op (or method) and the input at fault; the failure message lists
each other outcome class with counts, examples and a command that reproduces each.
"""

from __future__ import annotations

import json
import os

from probe_fuzz_strategies import collect, core_spec, graph_spec, options_spec, pack_spec
from probe_pool import failure_counts, run_specs, summarise

from rnngraph import _native

BUDGET = {"graph": 2000, "core": 1600, "pack": 350, "options": 350}  # examples per layer
STRATEGIES = {"graph": graph_spec, "core": core_spec, "pack": pack_spec,
              "options": options_spec}


def specs_for(layer: str) -> list[dict]:
    return collect(STRATEGIES[layer](), BUDGET[layer])


def report(name: str, text: str) -> None:
    """Also write the summary where RNNGRAPH_PROBE_REPORT points (a directory), if set."""
    folder = os.environ.get("RNNGRAPH_PROBE_REPORT")
    if folder:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{name}.txt"), "w") as out:
            out.write(text + "\n")


def run_and_check(name: str, specs: list[dict], env: dict[str, str] | None = None) -> dict:
    results = run_specs(specs, env=env)
    counts, text = summarise(specs, results)
    report(name, text)
    failures = failure_counts(counts)
    assert not failures, f"fuzz outcomes that are failures: {failures}\n{text}"
    return counts


def unique(specs: list[dict]) -> list[dict]:
    seen: set[str] = set()
    out = []
    for spec in specs:
        key = json.dumps(spec, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(spec)
    return out


def test_fuzz_graph_and_core():
    specs = unique([spec for layer in BUDGET for spec in specs_for(layer)])
    assert len(specs) >= 2000, len(specs)
    counts = run_and_check("fuzz", specs)
    # Not degenerate: plenty of both accepted and refused cases.
    assert counts.get("ok", 0) >= 500 and counts.get("rejected", 0) >= 500, counts


def test_fuzz_core_at_the_other_kernel_levels():
    """The compiled-module cases again at every other kernel level this CPU runs (each
    level is its own module; RNNGRAPH_KERNELS picks it in the children)."""
    others = [lvl for lvl in _native.supported_levels() if _native.load(lvl) is not _native.core]
    specs = unique(specs_for("core"))[:600]
    for level in others:
        run_and_check(f"fuzz-core-{level}", specs, env={_native.VARIABLE: level})
