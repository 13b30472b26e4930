"""Ops built on placeholders of chosen shapes and dtypes, and not run: for the tests of what
an op refuses at build time (tests/errors/) and of the Graph surface.

``input_shapes(case, gradient)`` gives the shape of every input the case passes (SPEC
section 1), with ``gradient`` also the gradient op's saved tensors and cotangents (section 6);
``on_placeholders`` builds the forward or gradient op on placeholders of those shapes, some
of them overridden, and returns the graph, the placeholders and what the op returns
(``build``: only that; ``feeds`` pairs the placeholders with arrays); ``build_pair`` wires a
training forward op into its gradient op, each with its own descriptor. ``every_input``
gives the case of the error tests: every input the cell takes, at sizes that differ from
each other (a swapped dimension shows).
"""

from __future__ import annotations

import rnngraph as rg

from . import spec
from .case import Case, layout_dims

SIZES = {"T": 3, "N": 2, "I": 5, "H": 4}
_CASE_DESCRIPTOR = object()


def every_input(cell: str, text: str = "fwd") -> Case:
    """The case ``text`` (a case id) of ``cell`` at ``SIZES``, giving every input the cell
    takes (``Case.with_all_inputs``)."""
    return Case.parse(cell, text).but(**SIZES).with_all_inputs()


def op_name(cell: str, gradient: bool = False) -> str:
    """The op's name as its error messages spell it."""
    return spec.GRADIENT_OPS[cell] if gradient else cell


def input_shapes(case, gradient: bool = False) -> dict:
    """{label: shape} of the inputs ``case`` gives its forward op; with ``gradient``, also
    ``sourceGradient`` and ``zState``, the saved ``cellOutputFwd`` (LSTM) or ``outputFwd``
    (GRU), and ``stateGradient`` / ``cellGradient`` where the case's signal has dS / dC."""
    T, N, I, H, D, G, DH = case.T, case.N, case.I, case.H, case.D, case.G, case.DH
    sizes = {"T": T, "N": N, "DH": DH, "1": 1, "D4H": D * 4 * H, "2": 2, "4H": 4 * H}
    shapes = {"source": (T, N, I if case.inputWeight else D * G * H),
              "recurrentWeight": (2, G * H, H) if D == 2 else (G * H, H)}
    if case.inputWeight:
        shapes["inputWeight"] = (D * G * H, I)
    if case.bias:
        shapes["bias"] = (D * G * H,)
    for label in ("initState", "initCell", "peephole", "mask"):
        if getattr(case, label):
            shapes[label] = tuple(sizes[d] for d in layout_dims(getattr(case, label)))
    if case.secondaryBias:
        shapes["secondaryBias"] = (DH,)
    if gradient:
        shapes |= {"sourceGradient": (T, N, DH), "zState": (T, N, D * G * H)}
        saved = {"LSTM": "cellOutputFwd", "GRU": "outputFwd"}.get(case.cell)
        if saved:
            shapes[saved] = (T, N, DH)
        for signal, label in (("dS", "stateGradient"), ("dC", "cellGradient")):
            if signal in case.signal.split("+"):
                shapes[label] = (N, DH)
    return shapes


def on_placeholders(case, gradient: bool = False, *, shapes=None, dataType=rg.float32,
                    dtypes=None, names=None, descriptor=_CASE_DESCRIPTOR, name=None) -> tuple:
    """The forward (or gradient) op of ``case`` built on placeholders of ``input_shapes``,
    not run: (graph, {label: placeholder}, the op's outputs). ``shapes`` overrides shapes
    (a dimension may be None; a shape of None passes None for that input) and adds inputs;
    placeholders are ``dataType`` except the labels ``dtypes`` names, and named by label
    except those ``names`` renames; ``descriptor`` replaces the case's own (anything, to test
    what is refused); ``name`` names the op."""
    g = rg.Graph()
    dtypes, names = dtypes or {}, names or {}
    ph = {label: None if shape is None else
          g.placeholder(shape=shape, dataType=dtypes.get(label, dataType),
                        name=names.get(label, label))
          for label, shape in (input_shapes(case, gradient) | (shapes or {})).items()}
    if descriptor is _CASE_DESCRIPTOR:
        descriptor = case.descriptor()
    inputs = {label: tensor for label, tensor in ph.items() if label != "source"}
    extra = {} if name is None else {"name": name}
    outputs = getattr(g, op_name(case.cell, gradient))(ph["source"], **inputs,
                                                        descriptor=descriptor, **extra)
    return g, {label: tensor for label, tensor in ph.items() if tensor is not None}, outputs


def feeds(placeholders: dict, x: dict) -> dict:
    """{placeholder: array} for every label of ``x``."""
    return {placeholders[label]: array for label, array in x.items()}


def build(case, gradient: bool = False, **options) -> list:
    """The outputs of ``on_placeholders`` (float32 placeholders unless ``dtypes`` says
    otherwise)."""
    return on_placeholders(case, gradient, **options)[2]


def build_pair(case, forward_descriptor, gradient_descriptor) -> list:
    """A training forward op (``forward_descriptor`` with training set) on float32
    placeholders of every input of ``case``, wired into its gradient op as a user wires them
    (zState and the saved h / c from the forward op); returns the gradient op's outputs."""
    cell = case.cell
    g = rg.Graph()
    ph = {label: g.placeholder(shape=shape, dataType=rg.float32, name=label)
          for label, shape in input_shapes(case, gradient=True).items()}
    inputs = {label: ph[label] for label in input_shapes(case) if label != "source"}
    train = forward_descriptor.copy()
    train.training = True
    outputs = getattr(g, cell)(ph["source"], **inputs, descriptor=train)
    saved = dict(zip(spec.output_names(cell, training=True), outputs))
    extra = {"zState": saved["zState"]}
    if cell == "LSTM":
        extra["cellOutputFwd"] = saved["c"]
    if cell == "GRU":
        extra["outputFwd"] = saved["h"]
    signals = {label: ph[label] for label in ("sourceGradient", "stateGradient", "cellGradient")
               if label in ph}
    return getattr(g, spec.GRADIENT_OPS[cell])(ph["source"], **inputs, **extra, **signals,
                                                descriptor=gradient_descriptor)
