"""The LSTM gradient op's internal ``cellSequenceGradient``: dL/dc[t] for every step,
``[T, N, D·H]`` laid out as the forward op's ``c`` (``cellOutputFwd``), reached only through
``rnngraph._native.core.rnn_gradients``. Central differences (float64) of

    L = Σ h·gh + Σ c·gc (+ Σ h_final·dS + Σ c_final·dC)

through rnngraph's forward op (``rnngraph.Graph`` on placeholders) and through the NumPy
reference, against ``rnn_gradients`` given sourceGradient = gh and cellSequenceGradient = gc:
directions, peephole, masks, forgetGateLast, cellGradient and stateGradient also given, c as
the only signal, T = 1; then T = 0 and N = 0, gc at the last processed step as cellGradient,
absent = None = zeros, every kernel level and work split, float32, and the shape checks of
the binding and of the Python layouts.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest

import rnngraph as rg
from rnngraph import _native
from rnngraph._native import core
from rnngraph.ops.layouts import infer_sizes, normalise
from rnngraph.ops.lstm import LSTM_CELL
from toolkit import (
    Case,
    Signals,
    assert_all_close,
    assert_close,
    assert_gradients_close,
    blas_threads,
    cases,
    differentiable,
    final,
    float32_and_float64,
    forward,
    gradients,
    make_inputs,
    numerical_gradients,
    random_direction_check,
    reference,
    signals,
)
from toolkit.paths import SPLITS, forced_paths

CELL = "LSTM"
LABEL = "cellSequenceGradient"


class Cotangents(NamedTuple):
    """gh = dL/dh [T,N,D·H], gc = dL/dc [T,N,D·H]; dS, dC = dL/d(final state, final cell)
    [N,D·H] or None."""

    gh: np.ndarray
    gc: np.ndarray
    dS: np.ndarray | None = None
    dC: np.ndarray | None = None


def cotangents(case, rng) -> Cotangents:
    """gh, dS, dC as the case's signal says (toolkit.signals), and a random gc."""
    sig = signals(case, rng)
    gc = rng.standard_normal((case.T, case.N, case.DH)).astype(case.dtype)
    return Cotangents(sig.dy, gc, sig.dS, sig.dC)


def core_options(case, module=core):
    """The case's descriptor as ``module``'s LSTMOptions (each kernel level has its own)."""
    activations = {slot: int(getattr(rg.RNNActivation, name)) for slot, name in case.activations}
    return module.LSTMOptions(
        reverse=case.reverse,
        bidirectional=case.bidirectional,
        forgetGateLast=case.forgetGateLast,
        **activations,
    )


def dense_inputs(case, x: dict) -> dict:
    """The inputs in the dense layouts the core takes (SPEC.md section 1): states [N, D·H],
    peephole [D·4H], the mask expanded to [T, N, D·H]."""
    T, N, DH = case.T, case.N, case.DH
    out = dict(x)
    for label in ("initState", "initCell"):
        if label in x:
            out[label] = x[label].reshape(N, DH)
    if "peephole" in x:
        out["peephole"] = x["peephole"].reshape(-1)
    if "mask" in x:
        out["mask"] = np.ascontiguousarray(np.broadcast_to(x["mask"], (T, N, DH)))
    return out


def core_gradients(case, x: dict, saved: dict, cot: Cotangents, *, module=core, **given) -> dict:
    """``module.rnn_gradients`` after the training forward ``saved`` ({"h", "c", "zState"}):
    {label: gradient shaped like its input}, in SPEC order. ``given`` overrides the
    cotangents' entries by label (e.g. cellSequenceGradient=None, or leave it out with
    ``omit=True``)."""
    omit = given.pop("omit", False)
    inputs = (
        dense_inputs(case, x)
        | {
            "sourceGradient": cot.gh,
            "zState": saved["zState"],
            "cellOutputFwd": saved["c"],
            "stateGradient": cot.dS,
            "cellGradient": cot.dC,
            LABEL: cot.gc,
        }
        | given
    )
    if omit:
        del inputs[LABEL]
    grads = module.rnn_gradients(core_options(case, module), inputs)
    assert list(grads) == list(case.returned), f"{case.id}: {list(grads)}"
    return {label: grads[label].reshape(x[label].shape) for label in case.returned}


def loss(case, cot: Cotangents, through: str):
    """L(inputs) = Σ h·gh + Σ c·gc (+ Σ h_final·dS + Σ c_final·dC), through rnngraph's
    forward op or the NumPy reference."""

    def value(x):
        out = reference(case, x) if through == "reference" else forward(case, x)
        total = float(np.sum(out["h"] * cot.gh)) + float(np.sum(out["c"] * cot.gc))
        if cot.dS is not None:
            total += float(np.sum(final(out["h"], case) * cot.dS))
        if cot.dC is not None:
            total += float(np.sum(final(out["c"], case) * cot.dC))
        return total

    return value


def check_against_finite_differences(case, x, cot, analytic):
    inputs = differentiable(case, x)
    for through in ("rnngraph", "reference"):
        value = loss(case, cot, through)
        numeric = numerical_gradients(lambda a, value=value: value({**x, **a}), inputs)
        assert_gradients_close(analytic, numeric, f"{CELL} {case.id} +{LABEL} (FD of {through})")


FD_CASES = cases(
    CELL,
    # directions, with and without states and peephole
    "fwd-dy",
    "fwd-h0-c0-dy",
    "fwd-h0-c0-peephole-dy",
    "reverse-h0-c0-dy",
    "reverse-h0-c0-peephole-dy",
    "bi-h0-c0-dy",
    "bi-h0-c0-peephole[2,4H]-dy",
    "reverse+bi-h0-c0-peephole-dy",
    "bi-nobias-h0[1,N,DH]-c0[1,N,DH]-dy",
    "fwd-noW-h0-c0-peephole-dy",
    # masks
    "fwd-h0-c0-peephole-mask-dy",
    "reverse-h0-c0-mask[T,N,1]-dy",
    "bi-h0-c0-peephole-fracmask[T,N,1]-dy",
    # forgetGateLast, other activations
    "fwd-forgetGateLast-h0-c0-peephole-dy",
    "bi-forgetGateLast-h0-c0-peephole[2,4H]-mask-dy",
    "reverse-f=tanh-act=sigmoid-h0-c0-peephole-dy",
    "fwd-z=relu-act=none-h0-c0-peephole-dy",
    # with cellGradient (and stateGradient) too
    "fwd-h0-c0-peephole-dy+dC",
    "reverse-h0-c0-peephole-dy+dC",
    "bi-h0-c0-peephole[2,4H]-dy+dC",
    "reverse-h0-c0-peephole-mask",
    "bi-h0-c0-mask",
    # sizes
    "fwd-h0-c0-peephole-dy-T1",
    "reverse-h0-c0-dy+dC-T1",
    "bi-h0-c0-peephole[2,4H]-dy+dC-T1",
    "bi-h0-c0-peephole-dy-N1-I5-H3",
)


@pytest.mark.parametrize("case", FD_CASES)
def test_gradients_match_finite_differences(case, rng):
    x = make_inputs(case, rng)
    saved = forward(case, x)
    cot = cotangents(case, rng)
    analytic = core_gradients(case, x, saved, cot)
    # gc changes every gradient (a mask may hide initState altogether).
    without = core_gradients(case, x, saved, cot, omit=True)
    for label in analytic:
        if label != "initState" or not case.mask:
            assert not np.array_equal(analytic[label], without[label]), f"{case.id}: d{label}"
    check_against_finite_differences(case, x, cot, analytic)


@pytest.mark.parametrize(
    "case",
    cases(
        CELL,
        "fwd-h0-c0-peephole-dy",
        "reverse-h0-c0-peephole-dy",
        "bi-h0-c0-peephole[2,4H]-mask-dy",
    ),
)
def test_cell_sequence_as_the_only_signal(case, rng):
    """gh = 0, no dS or dC: every gradient comes through c alone, and is non-zero."""
    x = make_inputs(case, rng)
    saved = forward(case, x)
    cot = cotangents(case, rng)._replace(gh=np.zeros((case.T, case.N, case.DH)))
    analytic = core_gradients(case, x, saved, cot)
    for label, value in analytic.items():
        if label != "initState" or not case.mask:  # a mask may hide initState
            assert np.any(value != 0), f"{case.id}: d{label} is zero"
    check_against_finite_differences(case, x, cot, analytic)


@pytest.mark.parametrize(
    "case",
    cases(CELL, *(f"{d}-h0-c0-peephole-dy+dC" for d in ("fwd", "reverse", "bi", "reverse+bi"))),
)
def test_last_processed_step_is_cell_gradient(case, rng):
    """cellGradient (SPEC section 6) is dL/dc at the last processed step of each direction
    (SPEC section 4: c[T-1] forward, c[0] reverse): given as gc there instead, the
    gradients are the same."""
    x = make_inputs(case, rng)
    saved = forward(case, x)
    cot = cotangents(case, rng)
    gc = np.zeros_like(cot.gc)
    for d, reverse in enumerate((False, True) if case.bidirectional else (case.reverse,)):
        columns = slice(d * case.H, (d + 1) * case.H)
        gc[0 if reverse else -1, :, columns] = cot.dC[:, columns]
    via_cell_gradient = core_gradients(case, x, saved, cot._replace(gc=None))
    via_sequence = core_gradients(case, x, saved, cot._replace(gc=gc, dC=None))
    assert_all_close(via_sequence, via_cell_gradient, "float64", case.id)


@pytest.mark.parametrize("case", cases(CELL, "fwd-h0-c0-peephole-mask", "bi-h0-c0-peephole[2,4H]"))
def test_absent_none_and_zeros_are_the_same(case, rng):
    """Without the input, with None and with zeros: bit for bit the same gradients, equal to
    LSTMGradients' through rnngraph.Graph."""
    x = make_inputs(case, rng)
    saved = forward(case, x)
    cot = cotangents(case, rng)
    absent = core_gradients(case, x, saved, cot, omit=True)
    through_graph = gradients(case, x, Signals(cot.gh, cot.dS, cot.dC))
    assert_all_close(absent, through_graph, "float64", case.id)
    assert_all_close(
        core_gradients(case, x, saved, cot._replace(gc=None)), absent, "identical", case.id
    )
    assert_all_close(
        core_gradients(case, x, saved, cot._replace(gc=np.zeros_like(cot.gc))),
        absent,
        "identical",
        case.id,
    )


@pytest.mark.parametrize(
    "case",
    [
        Case(CELL, direction, T=T, N=N, signal=signal).with_all_inputs().param()
        for direction in ("fwd", "bi")
        for (T, N) in ((0, 2), (3, 0), (0, 0))
        for signal in ("dy", "dy+dS+dC")
    ],
)
def test_empty_sequence_or_batch(case, rng):
    """T = 0 or N = 0: an empty gc [T, N, D·H] is accepted; the weights' gradients are zeros
    and the initial states' are the final states' cotangents (T = 0), as without gc."""
    x = make_inputs(case, rng)
    saved = forward(case, x)
    cot = cotangents(case, rng)
    assert cot.gc.shape == (case.T, case.N, case.DH) and cot.gc.size == 0
    grads = core_gradients(case, x, saved, cot)
    assert_all_close(grads, core_gradients(case, x, saved, cot, omit=True), "identical", case.id)
    for label in ("recurrentWeight", "inputWeight", "bias", "peephole"):
        np.testing.assert_array_equal(grads[label], 0, err_msg=label)
    if case.N > 0:
        zeros = np.zeros((case.N, case.DH))
        np.testing.assert_array_equal(grads["initState"], zeros if cot.dS is None else cot.dS)
        np.testing.assert_array_equal(grads["initCell"], zeros if cot.dC is None else cot.dC)


@pytest.mark.parametrize("level", _native.supported_levels())
def test_every_kernel_level(level, rng):
    """Each kernel level built for this CPU gives the chosen level's gradients."""
    case = Case(
        CELL,
        "bi",
        forgetGateLast=True,
        initState="[N,DH]",
        initCell="[N,DH]",
        peephole="[2,4H]",
        mask="[T,N,1]",
        T=5,
        N=3,
        I=4,
        H=20,
    )
    x = make_inputs(case, rng, scale=0.5)
    saved = forward(case, x)
    cot = cotangents(case, rng)
    expected = core_gradients(case, x, saved, cot)
    got = core_gradients(case, x, saved, cot, module=_native.load(level))
    assert_all_close(got, expected, "float64_medium", level)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize(
    "case",
    cases(
        CELL,
        "reverse-h0-c0-peephole-mask-T4-N7-I5-H40",
        "bi-h0-c0-peephole[2,4H]-dy+dC-T4-N7-I5-H40",
    ),
)
def test_each_work_split(case, split, threads, rng):
    """The row-chunk loops and the team loops (tuning's work splits, forced) at 1 and 2
    threads: the directional derivative of the reference's loss along a random direction."""
    x = make_inputs(case, rng, scale=0.5)
    cot = cotangents(case, rng)
    with blas_threads(threads), forced_paths(split=split):
        analytic = core_gradients(case, x, forward(case, x), cot)
    value = loss(case, cot, "reference")
    random_direction_check(
        lambda a: value({**x, **a}),
        analytic,
        differentiable(case, x),
        rng,
        where=f"{CELL} {case.id} +{LABEL} split={split} threads={threads}",
    )


@pytest.mark.parametrize(
    "case",
    cases(
        CELL,
        "fwd-h0-c0-peephole-mask-dy-T6-N3-I4-H4",
        "reverse-h0-c0-dy+dC-T6-N3-I4-H4",
        "bi-h0-c0-peephole[2,4H]-T6-N3-I4-H4",
    ),
)
def test_float32_close_to_float64(case, rng):
    """float32 smoke: the same (float32-representable) numbers in both dtypes agree."""
    case32 = case.but(dtype="float32")
    x32, x64 = float32_and_float64(case, rng, scale=0.5)
    cot32 = cotangents(case32, rng)
    cot64 = Cotangents(*(None if a is None else a.astype(np.float64) for a in cot32))
    grads32 = core_gradients(case32, x32, forward(case32, x32), cot32)
    grads64 = core_gradients(case, x64, forward(case, x64), cot64)
    for label, value in grads32.items():
        assert value.dtype == np.float32, label
    assert_all_close(grads32, grads64, "float32_gradients", case.id)
    without = core_gradients(case32, x32, forward(case32, x32), cot32, omit=True)
    assert not np.array_equal(grads32["recurrentWeight"], without["recurrentWeight"])


def wrong_shapes(case):
    T, N, DH = case.T, case.N, case.DH
    return [
        (T, N, DH + 1),
        (T + 1, N, DH),
        (T, N + 1, DH),
        (N, DH),
        (1, T, N, DH),
        (T, N, case.H) if case.bidirectional else (T, N, 2 * DH),
    ]


@pytest.mark.parametrize("case", cases(CELL, "fwd-h0-c0-peephole", "bi-h0-c0-peephole[2,4H]"))
def test_wrong_shape_is_refused(case, rng):
    """A gc off [T, N, D·H] raises ValueError naming the op and the label: in the binding
    (rnn_gradients) and in the Python layouts (infer_sizes); normalise passes a right one
    through."""
    x = make_inputs(case, rng)
    saved = forward(case, x)
    cot = cotangents(case, rng)
    where = f"LSTMGradients: {LABEL}"
    arrays = dense_inputs(case, x) | {
        "sourceGradient": cot.gh,
        "zState": saved["zState"],
        "cellOutputFwd": saved["c"],
    }
    sizes = infer_sizes("LSTMGradients", LSTM_CELL, arrays | {LABEL: cot.gc}, case.bidirectional)
    assert (sizes["T"], sizes["N"], sizes["H"]) == (case.T, case.N, case.H)
    dense = normalise("LSTMGradients", arrays | {LABEL: cot.gc}, sizes, case.bidirectional)
    assert dense[LABEL] is cot.gc
    for shape in wrong_shapes(case):
        wrong = np.zeros(shape)
        with pytest.raises(ValueError, match=f"^{where}: expected shape"):
            core_gradients(case, x, saved, cot._replace(gc=wrong))
        with pytest.raises(ValueError, match=f"^{where}: expected shape"):
            infer_sizes("LSTMGradients", LSTM_CELL, arrays | {LABEL: wrong}, case.bidirectional)
    with pytest.raises(TypeError, match=f"^{where}: expected dtype float64"):
        core_gradients(case, x, saved, cot._replace(gc=cot.gc.astype(np.float32)))
    with pytest.raises(ValueError, match=f"^{where}: expected a C-contiguous"):
        core_gradients(case, x, saved, cot._replace(gc=np.asfortranarray(cot.gc)))


@pytest.mark.parametrize("cell", ["singleGateRNN", "GRU"])
def test_other_cells_do_not_take_it(cell, rng):
    case = Case(cell)
    x = make_inputs(case, rng)
    saved = forward(case, x)
    inputs = {**x, "sourceGradient": saved["h"], "zState": saved["zState"]}
    if cell == "GRU":
        inputs["outputFwd"] = saved["h"]
    inputs[LABEL] = np.zeros_like(saved["h"])
    options = getattr(core, f"{cell[0].upper()}{cell[1:]}Options")()
    with pytest.raises(ValueError, match=f"unknown label '{LABEL}'"):
        core.rnn_gradients(options, inputs)


def test_linear_in_the_cotangents(rng):
    """gc adds to the other cotangents' gradients: with stateGradient, the sum of each one's
    alone. gc at the reverse direction's last step (t = 0) reaches back to its first
    (source[T-1])."""
    case = Case(CELL, "reverse", initState="[N,DH]", initCell="[N,DH]", signal="dS")
    x = make_inputs(case, rng)
    saved = forward(case, x)
    cot = cotangents(case, rng)
    gc = np.zeros_like(cot.gc)
    gc[0] = cot.gc[0]  # only where the reverse direction ends
    both = core_gradients(case, x, saved, cot._replace(gc=gc))
    state_only = core_gradients(case, x, saved, cot._replace(gc=None))
    cell_only = core_gradients(case, x, saved, cot._replace(gc=gc, dS=None))
    for label in both:  # linear in the cotangents
        assert_close(both[label], state_only[label] + cell_only[label], "float64", label)
    assert np.any(cell_only["source"][-1] != 0)
