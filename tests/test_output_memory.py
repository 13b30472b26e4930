"""Large outputs reuse memory given back by freed outputs (python/src/output_pool.hpp): a
kept output must never be overwritten by a later run, and reused memory must hold exactly
the new results."""

import gc

import numpy as np
import pytest

import rnngraph as rg
from toolkit import (
    CELLS,
    Case,
    assert_all_close,
    assert_close,
    draw_inputs,
    forward,
    gradients,
    reference,
    signals,
)

# [T, N, D·G·H] zState of 64·32·4·128 floats = 4 MiB: above the 1 MiB pooling threshold.
SIZES = {"T": 64, "N": 32, "I": 16, "H": 128}


def run(case, x, sig):
    """The forward op, then the gradient op fed its saved tensors: every output is fresh."""
    return forward(case, x), gradients(case, x, sig, wired=False)


def test_kept_outputs_survive_later_runs_and_reused_memory_holds_new_results(rng):
    case = Case("LSTM", initState="[N,DH]", initCell="[N,DH]", signal="dy", dtype="float32",
                **SIZES)
    x1, x2 = (draw_inputs(case, rng, scale=0.2) for _ in range(2))
    sig = signals(case, rng)

    kept, kept_grads = run(case, x1, sig)
    snapshot = {k: v.copy() for k, v in kept.items()}
    grads_snapshot = {k: v.copy() for k, v in kept_grads.items()}
    assert kept["zState"].nbytes >= 1 << 20

    # Several runs whose outputs are dropped at once: their memory goes back to the pool
    # and comes out again for the next run.
    for _ in range(3):
        out, grads = run(case, x2, sig)
        for key in out:
            assert not np.shares_memory(out[key], kept[key])
        del out, grads
        gc.collect()
    out, _ = run(case, x2, sig)
    assert_all_close(kept, snapshot, "identical", "kept outputs")
    assert_all_close(kept_grads, grads_snapshot, "identical", "kept gradients")

    expected = reference(case, {k: v.astype(np.float64) for k, v in x2.items()})
    assert_close(out["h"], expected["h"], "float32_forward", "h in reused memory")
    assert out["h"].flags.writeable and out["h"].flags.c_contiguous


def test_outputs_outlive_their_graph_and_views_keep_memory_alive(rng):
    case = Case("GRU", initState="[N,DH]", dtype="float32", **SIZES)
    x = draw_inputs(case, rng, scale=0.2)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float32, name=k) for k, v in x.items()}
    source = ph.pop("source")
    h, = g.GRU(source, **ph, descriptor=case.descriptor())
    feeds = {source: x["source"], **{ph[k]: v for k, v in x.items() if k != "source"}}
    view = g.run(feeds=feeds, targetTensors=[h])[h][5:9]
    expected = view.copy()
    del g, h, ph, source
    gc.collect()
    for _ in range(3):  # runs that could reuse the memory if the view did not hold it
        forward(case, x)
    assert_close(view, expected, "identical", "the view")


@pytest.mark.parametrize("cell", CELLS)
def test_outputs_are_aligned_and_repeated_runs_identical(cell, rng):
    # Odd sizes: rows at every alignment; the element-wise code must split them the same way
    # on every run, which 64-byte aligned outputs guarantee.
    case = Case(cell, signal="dy", T=5, N=3, I=7, H=37).with_all_inputs()
    x = draw_inputs(case, rng)
    sig = signals(case, rng)
    runs = [run(case, x, sig) for _ in range(4)]
    for out, grads in runs:
        for array in (*out.values(), *grads.values()):
            assert array.ctypes.data % 64 == 0
    for out, grads in runs[1:]:
        assert_all_close(out, runs[0][0], "identical", f"{cell} outputs")
        assert_all_close(grads, runs[0][1], "identical", f"{cell} gradients")


def test_large_outputs_start_on_a_huge_page_boundary(rng):
    # Outputs of 2 MiB or more are 2 MiB aligned (and marked for transparent huge pages), so
    # the kernels' streams over them touch few pages.
    case = Case("LSTM", initState="[N,DH]", initCell="[N,DH]", T=64, N=16, I=8, H=256)
    out = forward(case, draw_inputs(case, rng))
    large = [array for array in out.values() if array.nbytes >= 2 << 20]
    assert large, "the shapes above should give outputs of 2 MiB or more"
    for array in large:
        assert array.ctypes.data % (2 << 20) == 0


def test_each_threads_scratch_is_kept_memory_and_given_back_when_idle(rng):
    """The rows a step product copies stay in each thread's scratch from step to step and
    call to call (cpp/src/thread_scratch.hpp): counted by kept_memory(), and returned to the
    system by release_memory() or after an idle second, with the kept blocks."""
    import time

    T, N, I, H = 2, 4096, 8, 128  # a row chunk's copy of up to 2 MiB per thread
    g = rg.Graph()
    x = g.placeholder(shape=(T, N, I), dataType=rg.float32, name="x")
    (h,) = g.LSTM(x, recurrentWeight=(rng.standard_normal((4 * H, H)) * 0.1).astype(np.float32),
                  inputWeight=np.ones((4 * H, I), np.float32))
    grads = g.gradients(of=h, with_=[x])
    feeds = {x: rng.standard_normal((T, N, I)).astype(np.float32)}
    for release in (rg.release_memory, lambda: time.sleep(1.6)):
        g.run(feeds=feeds, targetTensors=[h, *grads.values()])
        assert rg.kept_memory() > 0
        release()
        assert rg.kept_memory() == 0
