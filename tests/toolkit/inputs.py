"""Input arrays for a ``Case``, in SPEC.md section-1 layouts, and its cotangents.

``make_inputs`` is the one input maker: it draws every input the case gives from the test's
generator and draws again until finite differences are valid (``fd_safe``).
``float32_and_float64`` gives the same numbers in both dtypes; ``signals`` draws the
cotangents the case names; ``one_direction`` cuts one direction out of a bidirectional
case.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import spec
from .case import layout_dims
from .runner import reference


def make_inputs(case, rng, *, scale=0.6, weight_scale=None, margin=spec.KINK_MARGIN,
                accept=None, attempts=100) -> dict:
    """Inputs for ``case`` by Swift label, drawn from ``rng`` until they are FD-safe.

    Values are ``scale``·N(0, 1) (weights: ``weight_scale``·N(0, 1), default ``scale``).
    A draw is kept when every pre-activation reaching relu or hardSigmoid lies at least
    ``margin`` from a kink, every relu slot sees both signs, and ``accept(preactivations)``
    (optional; ``{slot: [T, N, D·H]}`` as the reference returns them) holds. The result is
    fixed by the generator's state, so by the test id. With T = 0 or N = 0 there is nothing
    to check (and the loop reference cannot run): the first draw is returned.
    """
    for _ in range(attempts):
        x = draw_inputs(case, rng, scale=scale, weight_scale=weight_scale)
        if case.T == 0 or case.N == 0:
            return x
        _, pre = reference(case, x, return_preactivations=True)
        if fd_safe(case, pre, margin) and (accept is None or accept(pre)):
            return x
    raise AssertionError(f"{case.cell} {case.id}: no FD-safe inputs in {attempts} draws")


def scale_for(case, default=0.6) -> float:
    """``default``, or 2.0 when a slot uses hardSigmoid: its linear part is |x| < 2.5, so
    N(0, 2²)-sized pre-activations reach both saturated parts and the linear one."""
    return 2.0 if "hardSigmoid" in case.slot_activations.values() else default


def float32_and_float64(case, rng, **options) -> tuple:
    """``make_inputs`` for the float32 variant of ``case`` and the very same numbers widened
    to float64 (exactly representable), for float32-against-float64 comparisons."""
    x32 = make_inputs(case.but(dtype="float32"), rng, **options)
    return x32, {k: v.astype(np.float64) for k, v in x32.items()}


def fd_safe(case, preactivations: dict, margin=spec.KINK_MARGIN) -> bool:
    """Whether pre-activations keep ``margin`` from relu/hardSigmoid kinks, relu both signs."""
    for slot, values in preactivations.items():
        name = case.activation(slot)
        if values.size == 0 or name not in spec.KINKS:
            continue
        if min(float(np.min(np.abs(values - kink))) for kink in spec.KINKS[name]) < margin:
            return False
        if name == "relu" and not (np.any(values < 0) and np.any(values > 0)):
            return False
    return True


def hard_sigmoid_saturates(case, preactivations: dict) -> bool:
    """Whether every hardSigmoid slot sees both its linear part and a saturated one (|x| on
    both sides of 2.5), so both pieces are exercised; an ``accept`` for ``make_inputs``."""
    edge = max(spec.KINKS["hardSigmoid"])
    return all(np.any(np.abs(values) < edge) and np.any(np.abs(values) > edge)
               for slot, values in preactivations.items()
               if case.activation(slot) == "hardSigmoid")


def draw_inputs(case, rng, *, scale=0.6, weight_scale=None) -> dict:
    """One draw of the inputs (no FD-safety check), in a fixed order of draws."""
    weight_scale = scale if weight_scale is None else weight_scale
    T, N, I, H, D, G = case.T, case.N, case.I, case.H, case.D, case.G
    dtype = np.dtype(case.dtype)

    def normal(shape, s=scale):
        return (s * rng.standard_normal(shape)).astype(dtype)

    x = {"source": normal((T, N, I if case.inputWeight else D * G * H))}
    x["recurrentWeight"] = normal((2, G * H, H) if D == 2 else (G * H, H), weight_scale)
    if case.inputWeight:
        x["inputWeight"] = normal((D * G * H, I), weight_scale)
    if case.bias:
        x["bias"] = normal((D * G * H,))
    sizes = {"T": T, "N": N, "DH": D * H, "1": 1, "D4H": D * 4 * H, "2": 2, "4H": 4 * H}
    for label in ("initState", "initCell", "peephole"):
        layout = getattr(case, label)
        if layout:
            x[label] = normal(tuple(sizes[d] for d in layout_dims(layout)))
    if case.secondaryBias:
        x["secondaryBias"] = normal((D * H,))
    if case.mask:
        shape = tuple(sizes[d] for d in layout_dims(case.mask))
        x["mask"] = mask_values(rng, shape, case.fractional_mask).astype(dtype)
    return x


def mask_values(rng, shape, fractional: bool) -> np.ndarray:
    """A 0/1 mask holding both values, or (``fractional``) values in (0.1, 0.9) plus an exact
    0 and 1: the mask is a multiplier (SPEC section 5), not a flag. Sizes too small to hold
    them all keep what fits."""
    if fractional:
        mask = rng.uniform(0.1, 0.9, shape)
        if mask.size >= 3:
            mask.flat[0], mask.flat[-1] = 0.0, 1.0
        return mask
    mask = (rng.random(shape) > 0.4).astype(np.float64)
    if mask.size:
        mask.flat[0] = 0.0
        mask.flat[-1] = 1.0
    return mask


class Signals(NamedTuple):
    """Cotangents for a gradient op: dL/dh [T,N,D·H] (zeros when the case's signal has no
    "dy"), and dL/d(final state) / d(final cell) [N,D·H] or None."""

    dy: np.ndarray
    dS: np.ndarray | None = None
    dC: np.ndarray | None = None


def signals(case, rng) -> Signals:
    parts = case.signal.split("+")
    dtype = np.dtype(case.dtype)
    shape = (case.T, case.N, case.DH)
    dy = rng.standard_normal(shape) if "dy" in parts else np.zeros(shape)
    dS = rng.standard_normal((case.N, case.DH)) if "dS" in parts else None
    dC = rng.standard_normal((case.N, case.DH)) if "dC" in parts else None
    return Signals(*(None if a is None else a.astype(dtype) for a in (dy, dS, dC)))


def explicit_inputs(case, x: dict) -> tuple:
    """``case`` and ``x`` with each absent optional input given as what its absence means
    (SPEC.md section 1): inputWeight the identity (the source is already projected); bias,
    initState, initCell, peephole and secondaryBias zeros; states as [N, D·H]. The mask is
    left as it is. The op's results must not change."""
    dtype, N, DH, GH = np.dtype(case.dtype), case.N, case.DH, case.D * case.G * case.H
    absent = {"inputWeight": np.eye(GH), "bias": np.zeros(GH), "initState": np.zeros((N, DH)),
              "initCell": np.zeros((N, DH)), "peephole": np.zeros(case.D * 4 * case.H),
              "secondaryBias": np.zeros(DH)}
    out = dict(x)
    for label in (label for label in spec.OPTIONAL_INPUTS[case.cell] if label in absent):
        out[label] = x[label] if label in x else absent[label].astype(dtype)
        if label in ("initState", "initCell"):
            out[label] = out[label].reshape(N, DH)
    lstm = case.cell == "LSTM"
    full = case.but(inputWeight=True, bias=True, initState="[N,DH]",
                    initCell="[N,DH]" if lstm else None,
                    peephole=(case.peephole or "[D4H]") if lstm else None,
                    secondaryBias=case.cell == "GRU")
    return full, out


def one_direction(case, x: dict, d: int) -> tuple:
    """Direction ``d`` (0 forward, 1 reverse) of a bidirectional case and its inputs, as a
    unidirectional case and inputs (SPEC section 1: forward blocks / columns come first)."""
    half = case.but(direction=("fwd", "reverse")[d],
                    peephole="[D4H]" if case.peephole else None,
                    mask="[T,N,DH]" if case.mask else None)
    H, GH = case.H, case.G * case.H
    rows, cols = slice(d * GH, (d + 1) * GH), slice(d * H, (d + 1) * H)
    N = case.N
    out = {"recurrentWeight": x["recurrentWeight"][d]}
    out["source"] = x["source"] if "inputWeight" in x else x["source"][..., rows]
    for label in ("inputWeight", "bias"):
        if label in x:
            out[label] = x[label][rows]
    for label in ("initState", "initCell"):
        if label in x:
            out[label] = x[label].reshape(N, 2 * H)[:, cols].reshape(
                x[label].shape[:-1] + (H,))
    if "peephole" in x:
        out["peephole"] = x["peephole"].reshape(2, 4 * H)[d]
    if "secondaryBias" in x:
        out["secondaryBias"] = x["secondaryBias"][cols]
    if "mask" in x:
        full = np.broadcast_to(x["mask"], (case.T, N, 2 * H))
        out["mask"] = np.ascontiguousarray(full[..., cols])
    return half, out
