"""Large outputs reuse memory given back by freed outputs (python/src/output_pool.hpp): a
kept output must never be overwritten by a later run, and reused memory must hold exactly
the new results."""

import gc

import numpy as np

import harness
import rnngraph as rg

# [T, N, D·G·H] zState of 64·32·4·128 floats = 4 MiB: above the 1 MiB pooling threshold.
SHAPE = dict(T=64, N=32, I=16, H=128)


def run_lstm(x, dy):
    desc = harness.descriptor("LSTM", training=True)
    out = harness.forward("LSTM", x, desc)
    grads = harness.gradients("LSTM", x, desc, dy)
    return out, grads


def test_kept_outputs_survive_later_runs_and_reused_memory_holds_new_results():
    rng = np.random.default_rng(2)
    x1 = harness.make_inputs("LSTM", rng, **SHAPE, dtype=np.float32, scale=0.2)
    x2 = harness.make_inputs("LSTM", rng, **SHAPE, dtype=np.float32, scale=0.2)
    dy = rng.standard_normal((SHAPE["T"], SHAPE["N"], SHAPE["H"])).astype(np.float32)

    kept, kept_grads = run_lstm(x1, dy)
    snapshot = {k: v.copy() for k, v in kept.items()}
    grads_snapshot = {k: v.copy() for k, v in kept_grads.items()}
    assert kept["zState"].nbytes >= 1 << 20

    # Several runs whose outputs are dropped at once: their memory goes back to the pool
    # and comes out again for the next run.
    for _ in range(3):
        out, grads = run_lstm(x2, dy)
        for key in out:
            assert not np.shares_memory(out[key], kept[key])
        del out, grads
        gc.collect()
    out, grads = run_lstm(x2, dy)
    for key in kept:
        np.testing.assert_array_equal(kept[key], snapshot[key])
    for key in kept_grads:
        np.testing.assert_array_equal(kept_grads[key], grads_snapshot[key])

    reference = harness.reference_forward("LSTM", {k: v.astype(np.float64) for k, v in x2.items()},
                                          harness.descriptor("LSTM", training=True))
    np.testing.assert_allclose(out["h"], reference["h"], rtol=0, atol=2e-5)
    assert out["h"].flags.writeable and out["h"].flags.c_contiguous


def test_outputs_outlive_their_graph_and_views_keep_memory_alive():
    rng = np.random.default_rng(4)
    x = harness.make_inputs("GRU", rng, **SHAPE, dtype=np.float32, scale=0.2)
    g = rg.Graph()
    ph = {k: g.placeholder(shape=v.shape, dataType=rg.float32, name=k) for k, v in x.items()}
    source = ph.pop("source")
    h, = g.GRU(source, **ph, descriptor=rg.GRUDescriptor())
    feeds = {source: x["source"], **{ph[k]: v for k, v in x.items() if k != "source"}}
    view = g.run(feeds=feeds, targetTensors=[h])[h][5:9]
    expected = view.copy()
    del g, h, ph, source
    gc.collect()
    for _ in range(3):  # runs that could reuse the memory if the view did not hold it
        harness.forward("GRU", x, rg.GRUDescriptor())
    np.testing.assert_array_equal(view, expected)


def test_outputs_are_aligned_and_repeated_runs_identical():
    # Odd sizes: rows at every alignment; the element-wise code must split them the same way
    # on every run, which 64-byte aligned outputs guarantee.
    rng = np.random.default_rng(6)
    for cell in ("singleGateRNN", "LSTM", "GRU"):
        x = harness.make_inputs(cell, rng, T=5, N=3, I=7, H=37, mask=True, peephole=True,
                                secondaryBias=True)
        desc = harness.descriptor(cell, training=True)
        dy = rng.standard_normal((5, 3, 37))
        runs = [(harness.forward(cell, x, desc), harness.gradients(cell, x, desc, dy)) for _ in range(4)]
        for out, grads in runs:
            for array in (*out.values(), *grads.values()):
                assert array.ctypes.data % 64 == 0
        for out, grads in runs[1:]:
            for key in out:
                np.testing.assert_array_equal(out[key], runs[0][0][key], err_msg=f"{cell} {key}")
            for key in grads:
                np.testing.assert_array_equal(grads[key], runs[0][1][key], err_msg=f"{cell} d{key}")


def test_large_outputs_start_on_a_huge_page_boundary():
    # Outputs of 2 MiB or more are 2 MiB aligned (and marked for transparent huge pages), so
    # the kernels' streams over them touch few pages.
    rng = np.random.default_rng(7)
    x = harness.make_inputs("LSTM", rng, T=64, N=16, I=8, H=256)
    out = harness.forward("LSTM", x, harness.descriptor("LSTM", training=True))
    large = [array for array in out.values() if array.nbytes >= 2 << 20]
    assert large, "the shapes above should give outputs of 2 MiB or more"
    for array in large:
        assert array.ctypes.data % (2 << 20) == 0
