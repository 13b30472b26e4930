"""A gradient op whose zState comes from a forward op of the same graph, but which is given
other inputs than that op (another tensor, or a label given to one op and not the other),
computes the gradients of a different computation. MPSGraph allows it, so it stays legal,
but building it warns (UserWarning), naming the gradient op and every label that differs.
Inputs wired as the forward op's, as Graph.gradients wires them, never warn."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import rnngraph as rg
from toolkit import CELLS, GRADIENT_OPS, Case, draw_inputs
from toolkit.placeholders import every_input, input_shapes
from toolkit.spec import OPTIONAL_INPUTS, output_names

OTHER = object()  # an override: a new placeholder of the same shape
# Every input each forward op takes, in Swift order; those that may be left out of one op
# (inputWeight may not: it decides the source's shape).
SWIFT_ORDER = {cell: ("source", "recurrentWeight", *OPTIONAL_INPUTS[cell]) for cell in CELLS}
LABELS = [(cell, label) for cell in CELLS for label in SWIFT_ORDER[cell]]
OPTIONAL = [(cell, label) for cell, label in LABELS
            if label not in ("source", "recurrentWeight", "inputWeight")]


def _ids(pairs):
    return [f"{cell}-{label}" for cell, label in pairs]


def _wired(cell, forward=None, gradient=None, saved_from_twin=False):
    """A training forward op of ``cell`` on placeholders of every input it takes, wired
    into its gradient op as a user wires them (zState and the saved h or c from the forward
    op). ``forward`` / ``gradient`` override inputs of one op: {label: OTHER or None}.
    ``saved_from_twin``: the saved h or c comes from a second forward op of the same inputs
    and shapes. Returns the graph, the placeholders and the gradient op's outputs."""
    case = every_input(cell)
    g = rg.Graph()
    shapes = input_shapes(case, gradient=True)
    ph = {label: g.placeholder(shape=shape, dataType=rg.float32, name=label)
          for label, shape in shapes.items()}

    def inputs(overrides):
        given = {label: ph[label] for label in input_shapes(case)}
        for label, value in (overrides or {}).items():
            given[label] = value if value is not OTHER else g.placeholder(
                shape=shapes[label], dataType=rg.float32, name=f"other-{label}")
        return given

    descriptor = case.descriptor(training=True)
    fwd = inputs(forward)
    outputs = getattr(g, cell)(fwd.pop("source"), **fwd, descriptor=descriptor, name="fwd")
    saved = dict(zip(output_names(cell, training=True), outputs))
    zState = saved["zState"]
    if saved_from_twin:
        twin = inputs(forward)
        outputs = getattr(g, cell)(twin.pop("source"), **twin, descriptor=descriptor, name="twin")
        saved = dict(zip(output_names(cell, training=True), outputs))
    extra = {"zState": zState, "sourceGradient": ph["sourceGradient"]}
    if cell == "LSTM":
        extra["cellOutputFwd"] = saved["c"]
    if cell == "GRU":
        extra["outputFwd"] = saved["h"]
    grad = inputs(gradient)
    grads = getattr(g, GRADIENT_OPS[cell])(grad.pop("source"), **grad, **extra,
                                            descriptor=descriptor, name="grads")
    return g, ph, grads


def _message(cell, labels):
    return re.escape(f"{GRADIENT_OPS[cell]}: {', '.join(labels)}: not those of the {cell} "
                     "op 'fwd' that produced zState")


@pytest.mark.parametrize("cell,label", LABELS, ids=_ids(LABELS))
def test_another_tensor_warns_naming_the_label(cell, label):
    with pytest.warns(UserWarning, match=_message(cell, [label])) as record:
        _wired(cell, gradient={label: OTHER})
    assert len(record) == 1 and f"'other-{label}' instead of '{label}'" in str(record[0].message)
    assert record[0].filename == __file__  # points at the call that built the gradient op


@pytest.mark.parametrize("cell,label", OPTIONAL, ids=_ids(OPTIONAL))
def test_a_label_given_to_one_op_only_warns(cell, label):
    with pytest.warns(UserWarning, match=_message(cell, [label])) as record:
        _wired(cell, gradient={label: None})
    assert len(record) == 1 and f"{label}: given to {cell}, not here" in str(record[0].message)
    with pytest.warns(UserWarning, match=_message(cell, [label])) as record:
        _wired(cell, forward={label: None})
    assert len(record) == 1 and f"{label}: not given to {cell}" in str(record[0].message)


@pytest.mark.parametrize("cell", CELLS)
def test_every_differing_label_is_named_once_in_swift_order(cell):
    labels = SWIFT_ORDER[cell]
    overrides = {label: None if i % 2 and (cell, label) in OPTIONAL else OTHER
                 for i, label in enumerate(labels)}
    with pytest.warns(UserWarning, match=_message(cell, labels)) as record:
        _wired(cell, gradient=overrides)
    assert len(record) == 1


SAVED = {"LSTM": ("cellOutputFwd", "c"), "GRU": ("outputFwd", "h")}


@pytest.mark.parametrize("cell", list(SAVED))
def test_another_forward_ops_saved_sequence_warns(cell):
    """cellOutputFwd (outputFwd) from a second forward op of the same kind and shapes: legal,
    read as given, but the gradients are then those of no computation."""
    label, output = SAVED[cell]
    with pytest.warns(UserWarning, match=_message(cell, [label])) as record:
        _wired(cell, saved_from_twin=True)
    assert len(record) == 1
    assert f"{label}: 'twin/{output}' instead of its output 'fwd/{output}'" in str(
        record[0].message)


@pytest.mark.parametrize("cell", CELLS)
def test_matching_inputs_do_not_warn(cell):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _wired(cell)
    assert record == []


def test_a_dropped_mask_still_builds_and_runs_but_gives_other_gradients(rng):
    """Legal, as in MPSGraph: the gradient op computes with the inputs it was given."""
    case = every_input("LSTM")
    x = draw_inputs(case.but(dtype="float32"), rng)
    x["mask"] = (rng.random(x["mask"].shape) < 0.5).astype(np.float32)
    x |= {label: rng.standard_normal(shape).astype(np.float32)
          for label, shape in input_shapes(case, gradient=True).items() if label not in x}
    results = []
    for overrides in (None, {"mask": None}):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            g, ph, grads = _wired("LSTM", gradient=overrides)
        assert len(record) == (0 if overrides is None else 1)
        out = g.run(feeds={ph[k]: v for k, v in x.items()}, targetTensors=grads)
        results.append(out[grads[1]])  # dR
    assert not np.allclose(results[0], results[1])


@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("cell", CELLS)
def test_graph_gradients_wires_matching_inputs_and_does_not_warn(cell, training):
    case = every_input(cell)
    g = rg.Graph()
    ph = {label: g.placeholder(shape=shape, dataType=rg.float32, name=label)
          for label, shape in input_shapes(case).items()}
    inputs = {label: t for label, t in ph.items() if label != "source"}
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        outputs = getattr(g, cell)(ph["source"], **inputs,
                                   descriptor=case.descriptor(training=training))
        grads = g.gradients(of=outputs[0], with_=list(ph.values()))
    assert record == [] and set(grads) == set(ph.values())


def test_the_same_arrays_given_to_both_ops_do_not_warn_other_arrays_do(rng):
    """An array becomes a constant of each op: equal constants count as the same input."""
    case = Case("singleGateRNN", T=3, N=2, I=5, H=4, bias=True)
    x = draw_inputs(case, rng)
    g = rg.Graph()
    source = g.placeholder(shape=x["source"].shape, dataType=rg.float64, name="x")
    dy = g.placeholder(shape=(case.T, case.N, case.H), dataType=rg.float64, name="dy")
    weights = {k: v for k, v in x.items() if k != "source"}
    descriptor = case.descriptor(training=True)
    _, z = g.singleGateRNN(source, **weights, descriptor=descriptor, name="fwd")
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        g.singleGateRNNGradients(source, **weights, sourceGradient=dy, zState=z,
                                 descriptor=descriptor)
    assert record == []
    with pytest.warns(UserWarning, match=re.escape("singleGateRNNGradients: bias: not those of")):
        g.singleGateRNNGradients(source, **weights | {"bias": x["bias"] + 1.0},
                                 sourceGradient=dy, zState=z, descriptor=descriptor)


# The forward op's output each saved-tensor label of a gradient op stands for.
SAVED_OUTPUT_NAMES = {"zState": "zState", "cellOutputFwd": "c", "outputFwd": "h"}
# A saved forward tensor wired to another output of its forward op: (cell, label, output).
SWAPPED = [("singleGateRNN", "zState", "h"), ("LSTM", "zState", "h"), ("LSTM", "zState", "c"),
           ("LSTM", "cellOutputFwd", "h"), ("LSTM", "cellOutputFwd", "zState"),
           ("GRU", "zState", "h"), ("GRU", "outputFwd", "zState")]


def _swapped(cell, label, output, text="fwd", feeds=None):
    """A training forward op of ``cell`` wired into its gradient op with ``label`` given the
    forward op's ``output``; with ``feeds`` ({label: array}), the run's gradients."""
    case = every_input(cell, text)
    g = rg.Graph()
    shapes = input_shapes(case, gradient=True)
    ph = {k: g.placeholder(shape=v, dataType=rg.float32, name=k) for k, v in shapes.items()}
    inputs = {k: ph[k] for k in input_shapes(case) if k != "source"}
    descriptor = case.descriptor(training=True)
    saved = dict(zip(output_names(cell, training=True),
                     getattr(g, cell)(ph["source"], **inputs, descriptor=descriptor, name="fwd")))
    wired = {"zState": saved["zState"]}
    if cell == "LSTM":
        wired["cellOutputFwd"] = saved["c"]
    if cell == "GRU":
        wired["outputFwd"] = saved["h"]
    wired[label] = saved[output]
    grads = getattr(g, GRADIENT_OPS[cell])(ph["source"], **inputs, **wired,
                                           sourceGradient=ph["sourceGradient"],
                                           descriptor=descriptor)
    if feeds is None:
        return None
    out = g.run(feeds={ph[k]: v for k, v in feeds.items()}, targetTensors=grads)
    return [out[t] for t in grads]


@pytest.mark.parametrize("cell,label,output", SWAPPED, ids=["-".join(s) for s in SWAPPED])
def test_another_output_of_the_forward_op_is_refused_naming_both(cell, label, output):
    """Not a different computation but none at all (a single-gate RNN's h is even shaped
    like its zState): refused when the gradient op is built, naming the label and the
    output it was given."""
    expected = SAVED_OUTPUT_NAMES[label]
    message = re.escape(f"{GRADIENT_OPS[cell]}: {label}: 'fwd/{output}' is output '{output}' "
                        f"of the {cell} op 'fwd', not its '{expected}'")
    with pytest.raises(ValueError, match=message):
        _swapped(cell, label, output, "fwd-act=tanh" if cell == "singleGateRNN" else "fwd")


@pytest.mark.parametrize("activation", ["relu", "none"])
def test_a_single_gate_rnns_h_serves_as_its_zstate_where_act_is_idempotent(activation, rng):
    """relu and none rebuild the same h from h as from zState: accepted, same gradients."""
    text = f"fwd-act={activation}"
    case = every_input("singleGateRNN", text)
    feeds = draw_inputs(case, rng)
    feeds |= {k: rng.standard_normal(v) for k, v in input_shapes(case, gradient=True).items()
              if k not in feeds}
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    from_z = _swapped("singleGateRNN", "zState", "zState", text, feeds)
    from_h = _swapped("singleGateRNN", "zState", "h", text, feeds)
    for a, b in zip(from_z, from_h, strict=True):
        np.testing.assert_array_equal(a, b)
