"""One fuzz case of rnngraph, from a plain-data spec to a classified outcome.

A spec (a JSON-able dict, made by probe_fuzz_strategies) names a layer, an op, sizes, a
descriptor, the inputs given and at most one mutation (a bad or edge input). ``run_case``
materialises it with NumPy (values from the spec's seed), calls rnngraph and classifies what
happened against an oracle written from README.md and SPEC.md's layouts, independent of
rnngraph's own checking code:

- ``ok``: accepted, and the outputs have the right keys, shapes and dtypes (and are finite
  when every input was finite);
- ``rejected``: refused as expected, with a ValueError, TypeError or MemoryError whose
  message names the op (or the method called) and, where an input is at fault, its label;
- anything else is a failure class: ``false_rejection`` (a valid input refused),
  ``accepted_bad_input`` (an invalid one accepted), ``insane_output``, ``unnamed_error``,
  ``unclean_exception`` (another exception type), ``harness`` (this file's own error).
  The pool that runs cases in child processes adds ``crash`` and ``hang``.

Layers: ``graph`` (rnngraph.Graph: placeholders, constants, feeds, descriptors, run),
``core`` (rnngraph._native.core.rnn_forward / rnn_gradients with label-keyed dicts),
``pack`` (core.pack_forward_weights) and ``options`` (the core's typed options classes).
"""

from __future__ import annotations

import math
import re
import traceback
from typing import Any

import numpy as np

CELLS = ("singleGateRNN", "LSTM", "GRU")
GATES = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}
FORWARD_OPTIONAL = {
    "singleGateRNN": ("inputWeight", "bias", "initState", "mask"),
    "LSTM": ("inputWeight", "bias", "initState", "initCell", "mask", "peephole"),
    "GRU": ("inputWeight", "bias", "initState", "mask", "secondaryBias"),
}
SAVED = {"singleGateRNN": (), "LSTM": ("cellOutputFwd",), "GRU": ("outputFwd",)}
FINAL_GRADIENTS = {"singleGateRNN": ("stateGradient",), "LSTM": ("stateGradient", "cellGradient"),
                   "GRU": ("stateGradient",)}
RETURNED = {
    "singleGateRNN": ("source", "recurrentWeight", "inputWeight", "bias", "initState"),
    "LSTM": ("source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
             "initCell"),
    "GRU": ("source", "recurrentWeight", "inputWeight", "bias", "initState", "secondaryBias"),
}
FLAGS = {"singleGateRNN": ("reverse", "bidirectional"),
         "LSTM": ("reverse", "bidirectional", "forgetGateLast"),
         "GRU": ("reverse", "bidirectional", "resetGateFirst", "resetAfter", "flipZ")}
ACTIVATIONS = {
    "singleGateRNN": ("activation",),
    "LSTM": ("inputGateActivation", "forgetGateActivation", "cellGateActivation",
             "outputGateActivation", "activation"),
    "GRU": ("updateGateActivation", "resetGateActivation", "outputGateActivation"),
}
DEFAULT_ACTIVATIONS = {"activation": 1, "inputGateActivation": 3, "forgetGateActivation": 3,
                       "cellGateActivation": 2, "updateGateActivation": 3,
                       "resetGateActivation": 3}  # outputGateActivation: 3 (LSTM), 2 (GRU)
FORWARD_ONLY = ("training", "produceCell")  # descriptor flags the gradient op ignores
STATES = ("initState", "initCell", "stateGradient", "cellGradient")
SEQUENCES = ("sourceGradient", "outputFwd", "cellOutputFwd")
WEIGHTS = ("recurrentWeight", "inputWeight")
OPTIONS_CLASS = {"singleGateRNN": "SingleGateRNNOptions", "LSTM": "LSTMOptions",
                 "GRU": "GRUOptions"}
DESCRIPTOR_CLASS = {"singleGateRNN": "SingleGateRNNDescriptor", "LSTM": "LSTMDescriptor",
                    "GRU": "GRUDescriptor"}

ACCEPTED_EXCEPTIONS = (ValueError, TypeError, MemoryError)
FAILURE_CLASSES = ("false_rejection", "accepted_bad_input", "insane_output", "unnamed_error",
                   "unclean_exception", "harness", "crash", "hang")


# -- the op's inputs --------------------------------------------------------------------------
def op_name(spec: dict[str, Any]) -> str:
    return spec["cell"] + ("Gradients" if spec["grad"] else "")


def labels(spec: dict[str, Any]) -> tuple[str, ...]:
    """Every input label the op takes, required first."""
    cell = spec["cell"]
    if not spec["grad"]:
        return ("source", "recurrentWeight", *FORWARD_OPTIONAL[cell])
    return ("source", "recurrentWeight", "sourceGradient", "zState", *SAVED[cell],
            *FINAL_GRADIENTS[cell], *FORWARD_OPTIONAL[cell])


def required(spec: dict[str, Any]) -> tuple[str, ...]:
    if not spec["grad"]:
        return ("source", "recurrentWeight")
    return ("source", "recurrentWeight", "sourceGradient", "zState", *SAVED[spec["cell"]])


def given(spec: dict[str, Any]) -> tuple[str, ...]:
    """The labels given a value, in the op's order."""
    chosen = set(required(spec)) | set(spec["given"])
    if spec["W"]:
        chosen.add("inputWeight")
    return tuple(label for label in labels(spec) if label in chosen)


def layouts(label: str, cell: str, bidirectional: bool, with_w: bool,
            graph: bool) -> list[list[Any]]:
    """Accepted layouts: ints or (coefficient, symbol) pairs. The Graph also accepts states as
    [1, N, DH] and a bidirectional peephole as [2, 4H]; its mask is broadcast (not here)."""
    G, D = GATES[cell], 2 if bidirectional else 1
    T, N, I, H = (1, "T"), (1, "N"), (1, "I"), (1, "H")
    if label == "source":
        return [[T, N, I]] if with_w else [[T, N, (D * G, "H")]]
    if label == "recurrentWeight":
        return [[2, (G, "H"), H]] if bidirectional else [[(G, "H"), H]]
    if label == "inputWeight":
        return [[(D * G, "H"), I]]
    if label == "bias":
        return [[(D * G, "H")]]
    if label in STATES:
        return [[N, (D, "H")], [1, N, (D, "H")]] if graph else [[N, (D, "H")]]
    if label == "peephole":
        return [[(D * 4, "H")], [2, (4, "H")]] if graph and bidirectional else [[(D * 4, "H")]]
    if label == "secondaryBias":
        return [[(D, "H")]]
    if label in SEQUENCES or label == "mask":
        return [[T, N, (D, "H")]]
    if label == "zState":
        return [[T, N, (D * G, "H")]]
    raise KeyError(label)


def dim_value(dim: Any, sizes: dict[str, int]) -> int:
    return dim if isinstance(dim, int) else dim[0] * sizes[dim[1]]


def symbols(label: str, spec: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for layout in layouts(label, spec["cell"], spec["desc"]["bidirectional"], spec["W"], True):
        out |= {d[1] for d in layout if not isinstance(d, int)}
    return out


def canonical_shape(label: str, spec: dict[str, Any], sizes: dict[str, int],
                    with_w: bool | None = None) -> tuple[int, ...]:
    """The core's layout of ``label`` at these sizes (``with_w``: whether an inputWeight is
    given; the spec's choice by default)."""
    with_w = spec["W"] if with_w is None else with_w
    layout = layouts(label, spec["cell"], spec["desc"]["bidirectional"], with_w, False)[0]
    return tuple(dim_value(d, sizes) for d in layout)


def solve(shapes: dict[str, tuple[int, ...]], spec: dict[str, Any],
          graph: bool) -> dict[str, int] | None:
    """The sizes T, N, I, H that every given shape fits, or None (the oracle for shapes).
    ``shapes`` has an entry for every given input; a non-array entry is never passed here."""
    cell, bidi, with_w = spec["cell"], spec["desc"]["bidirectional"], "inputWeight" in shapes
    r, x = shapes.get("recurrentWeight"), shapes.get("source")
    if r is None or x is None or len(r) != (3 if bidi else 2) or len(x) != 3:
        return None
    sizes = {"H": r[-1], "T": x[0], "N": x[1], "I": x[2] if with_w else 0}
    if sizes["H"] <= 0 or (with_w and sizes["I"] <= 0):
        return None
    for label, shape in shapes.items():
        if label == "mask" and graph:
            target = canonical_shape("mask", spec, sizes)
            if len(shape) > 3 or any(a not in (1, t) for a, t in
                                     zip(reversed(shape), reversed(target))):
                return None
            continue
        options = layouts(label, cell, bidi, with_w, graph)
        if not any(len(lay) == len(shape) and all(dim_value(d, sizes) == a
                                                  for d, a in zip(lay, shape))
                   for lay in options):
            return None
    return sizes


def expected_outputs(spec: dict[str, Any], sizes: dict[str, int],
                     shapes: dict[str, tuple[int, ...]], graph: bool) -> dict[str, tuple | None]:
    """{output name: shape} (None: the core returns None there)."""
    cell, D = spec["cell"], 2 if spec["desc"]["bidirectional"] else 1
    T, N, H = sizes["T"], sizes["N"], sizes["H"]
    if spec["grad"]:
        returned = [label for label in RETURNED[cell] if label in shapes]
        if graph:
            return {label: shapes[label] for label in returned}
        with_w = "inputWeight" in shapes
        return {label: canonical_shape(label, spec, sizes, with_w) for label in returned}
    h = (T, N, D * H)
    z = (T, N, D * GATES[cell] * H)
    training = spec["desc"].get("training", False)
    if graph:
        if cell == "LSTM":
            names = (["h", "c", "zState"] if training
                     else ["h", "c"] if spec["desc"].get("produceCell") else ["h"])
        else:
            names = ["h", "zState"] if training else ["h"]
        return {n: z if n == "zState" else h for n in names}
    return {"h": h, "c": h if cell == "LSTM" else None, "zState": z if training else None}


def make_value(label: str, shape: tuple[int, ...], dtype: str,
               rng: np.random.Generator) -> np.ndarray:
    if label == "mask":
        return np.asarray((rng.random(shape) < 0.7).astype(dtype))
    if label == "zState":
        return np.asarray(rng.uniform(0.05, 0.95, shape).astype(dtype))
    scale = 0.4 if label in WEIGHTS else 0.6
    return np.asarray((rng.standard_normal(shape) * scale).astype(dtype))  # (rank 0 too)


def sizes_of(spec: dict[str, Any]) -> dict[str, int]:
    return {k: spec[k] for k in "TNIH"}


def valid_shapes(spec: dict[str, Any], graph: bool) -> dict[str, tuple[int, ...]]:
    """The shape of every given input, with the spec's alternative (still valid) layouts."""
    sizes, alt = sizes_of(spec), spec.get("alt", {})
    D = 2 if spec["desc"]["bidirectional"] else 1
    out = {}
    for label in given(spec):
        shape = canonical_shape(label, spec, sizes)
        if graph and label in alt:
            if label in STATES:
                shape = (1, *shape)
            elif label == "peephole" and D == 2:
                shape = (2, 4 * sizes["H"])
            elif label == "mask":  # e.g. "1x": [1, DH]; the trailing dims, 1 where "1"
                kept = shape[len(shape) - len(alt["mask"]):] if alt["mask"] else ()
                shape = tuple(1 if keep == "1" else s for keep, s in zip(alt["mask"], kept))
        out[label] = shape
    return out


def make_arrays(spec: dict[str, Any], graph: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(spec["seed"])
    huge = spec.get("huge")
    arrays = {}
    for label, shape in valid_shapes(spec, graph).items():
        if huge or math.prod(shape) > 1 << 22:
            arrays[label] = np.zeros(shape, spec["dtype"])  # calloc: pages stay untouched
        else:
            arrays[label] = make_value(label, shape, spec["dtype"], rng)
    return arrays


# -- mutations of one array -------------------------------------------------------------------
def misaligned(a: np.ndarray) -> np.ndarray:
    raw = np.zeros(a.nbytes + a.itemsize + 1, np.uint8)
    view = np.frombuffer(raw[1:1 + a.nbytes].data, dtype=a.dtype, count=a.size).reshape(a.shape)
    view[...] = a
    return view


def relayout(a: np.ndarray, how: str) -> np.ndarray:
    if how == "noncontig":
        if a.ndim == 0:
            return a
        wide = np.repeat(a, 2, axis=-1)
        return wide[..., ::2]
    if how == "fortran":
        return np.asfortranarray(a)
    if how == "negstride":
        return a[::-1] if a.ndim else a
    if how == "negstride_last":
        return np.ascontiguousarray(a[..., ::-1])[..., ::-1] if a.ndim else a
    if how == "misaligned":
        return misaligned(a)
    if how == "readonly":
        b = a.copy()
        b.setflags(write=False)
        return b
    if how == "broadcast":
        first = a.reshape(-1)[:1].reshape((1,) * a.ndim) if a.size else a
        return np.broadcast_to(first, a.shape) if a.size else a
    if how == "transposed":
        return a.T.copy().T
    if how == "sliced":  # a view into a bigger buffer, still C-contiguous
        big = np.zeros((2, *a.shape), a.dtype)
        big[1] = a
        return big[1]
    raise KeyError(how)


def recast(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "str":
        return a.astype(str)
    if dtype == "object":
        return a.astype(object)
    if dtype == "bool":
        return a != 0
    if dtype == "datetime":
        return np.zeros(a.shape, "datetime64[s]")
    if dtype == "bigendian":
        return a.astype(a.dtype.newbyteorder(">"))
    if dtype == "void":
        return np.zeros(a.shape, "V8")
    return a.astype(dtype)


def kind_of(dtype: str) -> str:
    """NumPy kind of a mutated dtype ('f', 'i', 'u', 'b', 'c', 'U', 'O', ...)."""
    return recast(np.zeros(1), dtype).dtype.kind


def non_array(what: str, a: np.ndarray | None) -> object:
    if what == "list" and a is not None:
        return a.tolist()
    if what == "ragged":
        return [[1.0, 2.0], [3.0]]
    return {"str": "abc", "bytes": b"ab", "int": 3, "float": 1.5, "dict": {"a": 1},
            "object": object(), "tuple": (1.0, 2.0), "list": [1.0], "set": {1.0},
            "complex": 1j, "memoryview": memoryview(b"abcd"), "none": None}[what]


def finite(values: Any) -> bool:
    return all(np.isfinite(v).all() for v in values
               if isinstance(v, np.ndarray) and v.dtype.kind in "fc")


# -- outcomes ---------------------------------------------------------------------------------
def word(text: str, name: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def judge_error(error: BaseException, expect: str, names: tuple[str, ...],
                labels_ok: tuple[str, ...] | None) -> dict[str, Any]:
    """Classify an exception: ``names`` are the op/method names one of which it must contain,
    ``labels_ok`` the labels one of which it must contain (None: no input is at fault)."""
    message = str(error)
    out = {"exc": type(error).__name__, "msg": message[:400]}
    if expect == "accept":
        return {"cls": "false_rejection", **out}
    if not isinstance(error, ACCEPTED_EXCEPTIONS):
        return {"cls": "unclean_exception", **out}
    if not any(word(message, n) for n in names):
        return {"cls": "unnamed_error", "why": f"names none of {list(names)}", **out}
    if labels_ok and not any(word(message, lab) for lab in labels_ok):
        return {"cls": "unnamed_error", "why": f"names none of the labels {list(labels_ok)}",
                **out}
    return {"cls": "rejected", **out}


class Expectation:
    """What a case should do: accept, reject (naming ``names`` and one of ``labels``), or
    either (rejection still clean and named)."""

    def __init__(self, expect: str, names: tuple[str, ...],
                 labels: tuple[str, ...] | None = None, finite: bool = True) -> None:
        self.expect = expect
        self.names = names
        self.labels = labels
        self.finite = finite


def check_outputs(results: dict[str, Any], wanted: dict[str, Any], dtype: str,
                  want_finite: bool) -> str | None:
    if set(results) != set(wanted):
        return f"outputs {sorted(results)} != expected {sorted(wanted)}"
    for key, shape in wanted.items():
        value = results[key]
        if shape is None:
            if value is not None:
                return f"{key}: expected None, got {type(value).__name__}"
            continue
        if not isinstance(value, np.ndarray):
            return f"{key}: expected an ndarray, got {type(value).__name__}"
        if value.shape != tuple(shape):
            return f"{key}: shape {value.shape} != expected {tuple(shape)}"
        if value.dtype != np.dtype(dtype):
            return f"{key}: dtype {value.dtype} != expected {dtype}"
    if want_finite and not finite(results.values()):
        return "non-finite outputs from finite inputs"
    return None


def verdict(expectation: Expectation, call, wanted, dtype: str) -> dict[str, Any]:
    """Run ``call`` (returns {output name: value}) and classify it."""
    try:
        results = call()
    except BaseException as error:
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return judge_error(error, expectation.expect, expectation.names, expectation.labels)
    if expectation.expect == "reject":
        return {"cls": "accepted_bad_input"}
    if wanted is None:  # accepted where rejection was also fine: nothing to compare
        return {"cls": "ok"}
    problem = check_outputs(results, wanted() if callable(wanted) else wanted, dtype,
                            expectation.finite)
    return {"cls": "insane_output", "why": problem} if problem else {"cls": "ok"}


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one case; never raises (a failure of this file is the ``harness`` class)."""
    try:
        runner = {"graph": run_graph_case, "core": run_core_case, "pack": run_pack_case,
                  "options": run_options_case}[spec["layer"]]
        return runner(spec)
    except BaseException as error:
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return {"cls": "harness", "exc": type(error).__name__, "msg": str(error)[:300],
                "tb": traceback.format_exc()[-1500:]}


# -- the Graph layer --------------------------------------------------------------------------
# Bytes a fuzz child may allocate (probe_worker limits its address space to a few GiB, or
# ASan's max_allocation_size_mb): an array above this cannot be made.
ALLOCATABLE = 8 << 30


def _descriptor(rg: Any, spec: dict[str, Any]) -> Any:
    cls = getattr(rg, DESCRIPTOR_CLASS[spec["cell"]])
    return cls(**spec["desc"])


class Input:
    """One op argument of a Graph case: a placeholder (fed) or a value passed to the op."""

    def __init__(self, label: str, entry: str, value: Any, shape: tuple[int, ...],
                 dtype: str) -> None:
        self.label = label
        self.entry = entry  # "const" (the value is the op's argument), "feed" or "dynamic"
        self.value = value
        self.declared_shape: tuple[Any, ...] = shape
        self.declared_dtype = dtype


def feed_shape(value: Any) -> tuple[int, ...] | None:
    """The shape of what the Graph makes of a feed (README: any real array-like), or None
    where it must refuse it."""
    import rnngraph as rg

    if isinstance(value, rg.Tensor):
        return None
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):
        return None
    return array.shape if array.dtype.kind in "fiu" else None


def fits(shape: tuple[int, ...], declared: tuple[Any, ...]) -> bool:
    return len(shape) == len(declared) and all(d is None or d == s
                                               for d, s in zip(declared, shape))


def related(spec: dict[str, Any], target: str, before: tuple[int, ...] | None,
            after: tuple[int, ...] | None, present: list[str]) -> tuple[str, ...]:
    """Labels an error about a changed shape of ``target`` may name: the target and every
    input that shares a size symbol with the dimensions that changed."""
    changed = _changed_symbols(spec, target, before or (), after)
    return tuple(lab for lab in present if lab == target or symbols(lab, spec) & changed)


def shape_problems(spec: dict[str, Any], mut: dict[str, Any], arrays: dict[str, np.ndarray],
                   shapes: dict[str, tuple[int, ...]], present: list[str]) -> list[tuple[str, ...]]:
    """Why the given shapes fit no sizes: the mutated input (and the inputs sharing the sizes
    it changed), and the spec's own sizes where H = 0, or I = 0 with an inputWeight."""
    kind, target = mut.get("kind"), mut.get("label")
    out = []
    if kind in ("shape", "rank", "feed_shape"):
        out.append(related(spec, target, arrays[target].shape, shapes.get(target), present))
    elif kind == "graph_layout":
        out.append((target,))
    if not out:
        out.append(tuple(lab for lab in present if symbols(lab, spec) & {"H", "I"}))
    return out


def size_problems(spec: dict[str, Any], present: list[str]) -> list[tuple[str, ...]]:
    """The spec's own sizes: H = 0, or I = 0 with an inputWeight (any input with H or I may
    be named)."""
    if spec["H"] == 0 or (spec["W"] and spec["I"] == 0):
        return [tuple(lab for lab in present if symbols(lab, spec) & {"H", "I"})]
    return []


KEPT: list[Any] = []  # other Graphs a case uses (a Tensor refers to its Graph weakly)


def keep(graph: Any) -> Any:
    KEPT.append(graph)
    return graph


def run_graph_case(spec: dict[str, Any]) -> dict[str, Any]:
    import rnngraph as rg

    KEPT.clear()

    mut = spec.get("mut") or {}
    kind, target, arg = mut.get("kind"), mut.get("label"), mut.get("arg")
    cell, op, dtype = spec["cell"], op_name(spec), spec["dtype"]

    # Calls to a method other than the op, and descriptor construction.
    if kind == "placeholder_dtype_bad":
        exp = Expectation("reject", ("placeholder",), ("dataType",))
        return verdict(exp, lambda: rg.Graph().placeholder(shape=(1,), dataType=arg,
                                                           name=target), None, dtype)
    if kind == "placeholder_shape_bad":
        bad = {"negative": (-1, 2), "float": (1.5, 2), "str": "ab", "int": 3, "none": None,
               "bool": (True, 2), "nested": ((1,), 2)}[arg]
        exp = Expectation("reject", ("placeholder",), ("shape",))
        return verdict(exp, lambda: rg.Graph().placeholder(shape=bad, dataType=dtype,
                                                           name=target), None, dtype)
    if kind == "constant_huge":
        exp = Expectation("reject", ("constant",), None)
        return verdict(exp, lambda: rg.Graph().constant(0.0, shape=tuple(arg), dataType=dtype,
                                                        name=target), None, dtype)
    if kind == "desc_bad_prop":
        cls = getattr(rg, DESCRIPTOR_CLASS[cell])
        value = _py_value(arg)
        exp = Expectation("reject", (cls.__name__,), (mut["prop"],))
        return verdict(exp, lambda: cls(**{mut["prop"]: value}), None, dtype)

    g = rg.Graph()
    pick = np.random.default_rng(spec["seed"] + 1)
    arrays = make_arrays(spec, graph=True)
    chain = spec["mode"] == "chain" and spec["grad"]
    derived = {"zState", *SAVED[cell]} if chain else set()
    want_finite = not spec.get("huge")
    names: tuple[str, ...] = (op, cell) if chain else (op,)

    # 1. The inputs, one possibly mutated.
    records: list[Input] = []
    for label, array in arrays.items():
        if label in derived:
            continue
        entry = spec["mode"] if spec["mode"] in ("feed", "dynamic", "const") else (
            ("const", "feed", "dynamic")[int(pick.integers(3))])
        if label == target and mut.get("entry"):
            entry = mut["entry"]
        rec = Input(label, entry, array, array.shape, dtype)
        if label == target:
            if kind in ("shape", "rank"):
                rec.value = _reshaped(array, mut, pick)
                rec.declared_shape = rec.value.shape
            elif kind == "feed_shape":  # the placeholder right, its feed not
                rec.value, rec.entry = _reshaped(array, mut, pick), "feed"
            elif kind == "dtype":
                rec.value = recast(array, arg)
            elif kind == "placeholder_dtype":
                rec.declared_dtype, rec.entry = arg, "feed"
                rec.value = array.astype(arg)
            elif kind == "layout":
                rec.value = relayout(array, arg)
            elif kind == "nonfinite":
                rec.value = array.copy()
                if array.size:
                    rec.value.reshape(-1)[pick.integers(array.size)] = float(arg)
                    want_finite = False
            elif kind == "object":
                rec.value = non_array(arg, array)
            elif kind == "none":
                rec.value, rec.entry = None, "const"
            elif kind in ("huge_feed", "huge_const"):
                rec.value = np.broadcast_to(np.zeros((), array.dtype), tuple(arg))
                rec.declared_shape = rec.value.shape
                rec.entry = "feed" if kind == "huge_feed" else "const"
            elif kind in ("symbolic_feed", "foreign"):
                rec.entry = "feed"
        records.append(rec)

    # 2. The oracle: what the Graph makes of each input, then the op's rules.
    present = [r.label for r in records if r.value is not None] + sorted(derived)
    problems: list[tuple[str, ...]] = []
    effective: dict[str, tuple[int, ...]] = {}
    by_label = {r.label: r for r in records}
    src = by_label["source"]
    if src.entry == "const":
        # (a float of 8 bytes or more, in either byte order: float64; README "Precision")
        source_dtype = ("float64" if isinstance(src.value, np.ndarray)
                        and src.value.dtype.kind == "f" and src.value.dtype.itemsize >= 8
                        else "float32")
    else:
        source_dtype = src.declared_dtype
    for rec in records:
        label, value = rec.label, rec.value
        if value is None:
            if label in required(spec):
                problems.append((label,))
            continue
        if rec.entry == "const":
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu":
                problems.append((label,))
                continue
            shape = value.shape
        else:
            shape = feed_shape(value)
            if shape is None or not fits(shape, rec.declared_shape):
                problems.append((label,))
                continue
            if rec.declared_dtype != source_dtype:
                problems.append(tuple(present))  # "expected dataType ... like source"
        if math.prod(shape) * np.dtype(source_dtype).itemsize > ALLOCATABLE:
            problems.append((label,))  # cannot be converted or copied
            continue
        effective[label] = shape
    if kind == "symbolic_feed":
        problems.append((target,))
    problems += size_problems(spec, present)
    sizes = None
    if not problems:
        shapes_for_solve = dict(effective)
        if chain:  # the forward op's outputs, shaped by the other inputs
            trial = solve(shapes_for_solve, spec, graph=True)
            if trial is not None:
                for label in derived:
                    shapes_for_solve[label] = canonical_shape(label, spec, trial)
        sizes = solve(shapes_for_solve, spec, graph=True)
        if sizes is None:
            problems += shape_problems(spec, mut, arrays, effective, present)
        else:
            effective = shapes_for_solve
    if spec.get("huge") and not problems:
        problems.append(())  # the outputs cannot be allocated: no input is at fault

    # 3. Build: descriptor and name mutations, the chain's forward op, the op itself.
    # descriptor=None means the defaults (the spec's desc then holds them)
    descriptor: Any = None if spec.get("desc_none") else _descriptor(rg, spec)
    name: Any = None
    if kind == "desc_type":
        descriptor = {"dict": dict(spec["desc"]), "str": "tanh", "int": 1,
                      "class": type(descriptor)}.get(arg) \
            if arg not in CELLS else getattr(rg, DESCRIPTOR_CLASS[arg])()
        problems.append(("descriptor",))
    elif kind == "name":
        name = _py_value(arg)
        if not (name is None or isinstance(name, str)):
            problems.append(("name",))

    arguments: dict[str, Any] = {}
    feeds: dict[Any, Any] = {}
    for rec in records:
        if rec.entry == "const" or rec.value is None:
            arguments[rec.label] = rec.value
            continue
        dims = rec.declared_shape
        if rec.entry == "dynamic":
            dims = tuple(None if pick.random() < 0.6 else d for d in dims)
        home = keep(rg.Graph()) if kind == "foreign" and rec.label == target else g
        tensor = home.placeholder(shape=dims, dataType=rec.declared_dtype, name=rec.label)
        arguments[rec.label] = tensor
        feeds[tensor] = rec.value
        if kind == "symbolic_feed" and rec.label == target:
            feeds[tensor] = g.placeholder(shape=(1,), dataType=dtype, name="other")
    if kind == "foreign":
        problems.append((target,))
        feeds = {k: v for k, v in feeds.items() if k.graph is g}

    extra: dict[str, Any] = {}
    if chain:
        forward_descriptor = _descriptor(rg, spec)
        forward_descriptor.training = True
        forward_arguments = {k: v for k, v in arguments.items()
                             if k in ("recurrentWeight", *FORWARD_OPTIONAL[cell])}
        try:
            outs = getattr(g, cell)(arguments["source"], descriptor=forward_descriptor,
                                    **forward_arguments)
        except BaseException as error:
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            return {**_judge_problems(error, problems, names), "stage": "build-forward"}
        arguments["zState"] = outs[-1]
        for saved in SAVED[cell]:
            arguments[saved] = outs[0] if saved == "outputFwd" else outs[1]
        if kind == "desc_mismatch":
            if descriptor is None:
                descriptor = _descriptor(rg, spec)
            prop = mut["prop"]
            current = getattr(descriptor, prop)
            setattr(descriptor, prop, (not current) if isinstance(current, bool)
                    else (int(current) + 1) % 5)
            # (reverse is ignored when both are bidirectional, SPEC.md section 3)
            ignored = prop == "reverse" and descriptor.bidirectional
            if prop not in FORWARD_ONLY and not ignored:
                problems.append(("descriptor",))
            extra["mismatch"] = prop

    source = arguments.pop("source")
    try:
        outputs = getattr(g, op)(source, descriptor=descriptor, name=name, **arguments)
    except BaseException as error:
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return {**_judge_problems(error, problems, names), "stage": "build", **extra}

    # 4. Run (with a run-level mutation, if any).
    targets: Any = list(outputs)
    run_feeds: Any = feeds
    if kind == "run":
        problem: tuple[str, ...] | None = None
        if arg == "feeds_list":
            run_feeds, problem = list(feeds.items()), ("feeds",)
        elif arg == "targets_none":
            targets, problem = None, ("targetTensors",)
        elif arg == "targets_tensor":
            targets, problem = outputs[0], ("targetTensors",)
        elif arg == "targets_foreign":
            targets = [keep(rg.Graph()).placeholder(shape=(1,), name="t")]
            problem = ("targetTensors",)
        elif arg == "targets_str":
            targets, problem = ["h"], ("targetTensors",)
        elif arg == "feed_key_str":
            run_feeds, problem = {**feeds, "source": arrays["source"]}, ("feeds",)
        elif arg == "feed_output":
            run_feeds, problem = {**feeds, outputs[0]: np.zeros(1)}, (outputs[0].name,)
        elif arg == "missing_feed" and feeds:
            dropped = next(iter(feeds))
            run_feeds = {k: v for k, v in feeds.items() if k is not dropped}
            problem = (dropped.name,)
        if problem is not None:
            problems.append(problem)
            names = (*names, "run")

    def call() -> dict[str, Any]:
        result = g.run(feeds=run_feeds, targetTensors=targets)
        if not isinstance(result, dict) or len(result) != len(outputs):
            return {"<run result>": repr(result)[:100]}
        named: dict[str, Any] = {}
        keys = list(expected_outputs(spec, sizes, effective, True)) if sizes else []
        for key, tensor in zip(keys, outputs):
            value = result.get(tensor)
            named[key] = value
            if isinstance(value, np.ndarray) and not fits(value.shape, tensor.shape):
                named[key] = f"Tensor shape {tensor.shape} does not fit {value.shape}"
        return named

    def wanted() -> dict[str, Any]:
        return expected_outputs(spec, sizes, effective, True) if sizes else {}

    try:
        results = call()
    except BaseException as error:
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return {**_judge_problems(error, problems, (*names, "run")), "stage": "run", **extra}
    if problems:
        return {"cls": "accepted_bad_input", "why": f"expected an error naming {problems[0]}",
                "stage": "run", **extra}
    problem_text = check_outputs(results, wanted(), source_dtype, want_finite)
    if problem_text:
        return {"cls": "insane_output", "why": problem_text, "stage": "run", **extra}
    return {"cls": "ok", "stage": "run", **extra}


def _judge_problems(error: BaseException, problems: list[tuple[str, ...]],
                    names: tuple[str, ...]) -> dict[str, Any]:
    """An error raised by a Graph case: fine when a problem was expected and the message
    names the op (or method) and one of the labels of some expected problem."""
    if not problems:
        return judge_error(error, "accept", names, None)
    labels_ok = tuple(sorted({lab for p in problems for lab in p}))
    return judge_error(error, "reject", names, labels_ok or None)


def _py_value(tag: Any) -> Any:
    """Plain values the specs cannot hold as JSON."""
    if isinstance(tag, dict) and "py" in tag:
        return {"object": object(), "none": None, "nan": float("nan"), "np_int": np.int64(2),
                "np_bool": np.bool_(True), "float": 1.0, "list": [1], "big": 2 ** 70}[tag["py"]]
    return tag


def _reshaped(array: np.ndarray, mut: dict[str, Any], pick: np.random.Generator) -> np.ndarray:
    """A copy of ``array`` with one dimension changed (shape) or one dimension dropped/added
    (rank)."""
    shape = list(array.shape)
    if mut["kind"] == "rank":
        if mut["arg"] == "drop" and shape:
            shape = shape[1:] if pick.random() < 0.5 else shape[:-1]
        elif mut["arg"] == "lead1":
            shape = [1, *shape]
        else:
            shape = [*shape, 2]
    elif shape:
        axis = mut.get("axis", 0) % len(shape)
        shape[axis] = max(0, shape[axis] + mut["arg"])
    else:
        shape = [2]
    return make_value(mut["label"], tuple(shape), array.dtype.name,
                      np.random.default_rng(0))


def _changed_symbols(spec: dict[str, Any], label: str | None, before: tuple[int, ...],
                     after: tuple[int, ...] | None) -> set[str]:
    """The size symbols whose dimensions changed between a valid and a mutated shape."""
    if label is None:
        return set()
    layout = layouts(label, spec["cell"], spec["desc"]["bidirectional"], spec["W"], True)[0]
    if after is None or len(after) != len(before):
        return {d[1] for d in layout if not isinstance(d, int)}
    out = set()
    if label == "mask" or len(layout) != len(before):
        return {"T", "N", "H"}
    for dim, b, a in zip(layout, before, after):
        if a != b and not isinstance(dim, int):
            out.add(dim[1])
    if label == "recurrentWeight":
        out.add("H")
    return out


# -- the compiled module ----------------------------------------------------------------------
def core_module() -> Any:
    from rnngraph import _native

    return _native.core


def core_options(core: Any, spec: dict[str, Any]) -> Any:
    values = {k: v for k, v in spec["desc"].items() if k not in FORWARD_ONLY}
    return getattr(core, OPTIONS_CLASS[spec["cell"]])(**values)


def core_problems(spec: dict[str, Any], inputs: dict[str, Any], arrays: dict[str, np.ndarray],
                  mut: dict[str, Any]) -> tuple[list[tuple[str, ...]], dict[str, int] | None,
                                                dict[str, tuple[int, ...]]]:
    """The oracle for label-keyed core inputs: only real arrays of the source's float dtype
    (native byte order), C-contiguous and aligned, in the canonical layouts. Returns the
    problems (each: the labels an error may name), the sizes and the given shapes."""
    problems: list[tuple[str, ...]] = []
    shapes: dict[str, tuple[int, ...]] = {}
    source = inputs.get("source")
    sdtype = source.dtype if isinstance(source, np.ndarray) else None
    if sdtype is None or sdtype.kind != "f" or sdtype.itemsize not in (4, 8) \
            or not sdtype.isnative:
        problems.append(("source",))
    present = [lab for lab, v in inputs.items() if v is not None]
    for label, value in inputs.items():
        if value is None:
            if label in required(spec):
                problems.append((label,))
            continue
        if not isinstance(value, np.ndarray):
            problems.append((label,))
            continue
        shapes[label] = value.shape
        if value.dtype != sdtype or not value.dtype.isnative:
            problems.append((label, "source"))
        if not (value.flags.c_contiguous and value.flags.aligned):
            problems.append((label,))
    problems += size_problems(spec, present)
    sizes = None
    if not problems:
        sizes = solve(shapes, spec, graph=False)
        if sizes is None:
            problems += shape_problems(spec, mut, arrays, shapes, present)
    if spec.get("huge") and not problems:
        problems.append(())
    return problems, sizes, shapes


def run_core_case(spec: dict[str, Any]) -> dict[str, Any]:
    core = core_module()
    mut = spec.get("mut") or {}
    kind, target, arg = mut.get("kind"), mut.get("label"), mut.get("arg")
    op = op_name(spec)
    method = "rnn_gradients" if spec["grad"] else "rnn_forward"
    arrays = make_arrays(spec, graph=False)
    pick = np.random.default_rng(spec["seed"] + 1)
    inputs: Any = dict(arrays)
    want_finite = not spec.get("huge")
    options: Any = core_options(core, spec)
    training: Any = spec["desc"].get("training", False)
    packed: Any = None
    names: tuple[str, ...] = (op,)
    extra_problem: tuple[str, ...] | None = None

    value = inputs.get(target)
    if kind in ("shape", "rank"):
        inputs[target] = _reshaped(value, mut, pick)
    elif kind == "dtype":
        inputs[target] = recast(value, arg)
    elif kind == "layout":
        inputs[target] = relayout(value, arg)
    elif kind == "nonfinite":
        inputs[target] = value.copy()
        if value.size:
            inputs[target].reshape(-1)[pick.integers(value.size)] = float(arg)
            want_finite = False
    elif kind == "object":
        inputs[target] = non_array(arg, value)
    elif kind == "none":
        inputs[target] = None
    elif kind == "graph_layout":  # a layout only the Graph accepts
        if target in STATES:
            inputs[target] = value.reshape(1, *value.shape)
        elif target == "peephole":
            inputs[target] = value.reshape(2, -1)
        elif target == "mask":
            inputs[target] = value[:, :1] if value.shape[1] != 1 else value[:, :, :1]
    elif kind == "unknown_label":
        extra_problem = (arg,)
    elif kind == "key_nonstr":
        key = {"int": 1, "bytes": b"source", "none": None, "float": 1.5}[arg]
        inputs[key] = arrays["source"]
        extra_problem = (repr(key),)
    elif kind == "inputs_type":
        inputs = {"list": list(arrays.values()), "none": None, "tuple": tuple(arrays.items()),
                  "str": "source"}[arg]
        extra_problem = ("inputs",)
    elif kind == "options_type":
        options = {"none": lambda: None, "dict": lambda: dict(spec["desc"]),
                   "str": lambda: spec["cell"], "descriptor": lambda: _graph_descriptor(spec),
                   "class": lambda: type(options),
                   "other": lambda: _other_level_options(spec) or type(options)}[arg]()
        extra_problem = ("options",)
    elif kind == "training_type":
        training = _py_value(arg)
        if not isinstance(training, bool):
            extra_problem = ("training",)
    elif kind == "packed":
        packed, ok = _packed(core, spec, arrays, arg)
        if not ok:
            extra_problem = ("packed",)
    if kind in ("unknown_label", "key_nonstr", "inputs_type", "options_type", "training_type",
                "packed"):
        names = (op, method)
    if kind == "unknown_label":
        inputs[arg] = np.zeros(1, spec["dtype"])

    if isinstance(inputs, dict):
        real = {k: v for k, v in inputs.items() if isinstance(k, str) and k in labels(spec)}
        problems, sizes, shapes = core_problems(spec, real, arrays, mut)
    else:
        problems, sizes, shapes = [], None, {}
    if extra_problem is not None:
        problems.append(extra_problem)

    def call() -> dict[str, Any]:
        if spec["grad"]:
            result = core.rnn_gradients(options, inputs)
            return dict(result) if isinstance(result, dict) else {"<result>": repr(result)}
        result = core.rnn_forward(options, inputs, training=training, packed=packed)
        if not isinstance(result, tuple) or len(result) != 3:
            return {"<result>": repr(result)[:100]}
        return dict(zip(("h", "c", "zState"), result))

    try:
        results = call()
    except BaseException as error:
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return {**_judge_problems(error, problems, names), "stage": "run"}
    if problems:
        return {"cls": "accepted_bad_input", "why": f"expected an error naming {problems[0]}",
                "stage": "run"}
    # the training flag the call was given (a training_type case may set it against the
    # descriptor's): it decides whether zState is made
    called = {**spec, "desc": {**spec["desc"], "training": training}}
    wanted = expected_outputs(called, sizes, shapes, False)
    problem_text = check_outputs(results, wanted, spec["dtype"], want_finite)
    if problem_text:
        return {"cls": "insane_output", "why": problem_text, "stage": "run"}
    return {"cls": "ok", "stage": "run"}


def _graph_descriptor(spec: dict[str, Any]) -> Any:
    import rnngraph as rg

    return _descriptor(rg, spec)


def _other_level_options(spec: dict[str, Any]) -> Any:
    """Options made by another kernel level's module (each has its own classes)."""
    from rnngraph import _native

    for level in _native.supported_levels():
        other = _native.load(level)
        if other is not _native.core:
            return core_options(other, spec)
    return None


def _packed(core: Any, spec: dict[str, Any], arrays: dict[str, np.ndarray],
            how: str) -> tuple[Any, bool]:
    """A packed= argument: the op's own weights packed (valid) or one that does not fit."""
    options = core_options(core, spec)
    r, w = arrays["recurrentWeight"], arrays.get("inputWeight")
    if how == "own":
        return core.pack_forward_weights(options, r, w), True
    if how == "other_dtype":
        other = "float64" if spec["dtype"] == "float32" else "float32"
        return core.pack_forward_weights(options, r.astype(other),
                                         None if w is None else w.astype(other)), False
    if how == "other_op":
        cell = next(c for c in CELLS if c != spec["cell"])
        other_spec = {**spec, "cell": cell, "desc": {"bidirectional": spec["desc"]["bidirectional"]}}
        G, H = GATES[cell], spec["H"]
        D = 2 if spec["desc"]["bidirectional"] else 1
        r2 = np.zeros((2, G * H, H) if D == 2 else (G * H, H), spec["dtype"])
        w2 = None if w is None else np.zeros((D * G * H, spec["I"]), spec["dtype"])
        return core.pack_forward_weights(core_options(core, other_spec), r2, w2), False
    if how == "other_shape":
        H = spec["H"] + 1
        G, D = GATES[spec["cell"]], 2 if spec["desc"]["bidirectional"] else 1
        r2 = np.zeros((2, G * H, H) if D == 2 else (G * H, H), spec["dtype"])
        w2 = None if w is None else np.zeros((D * G * H, spec["I"]), spec["dtype"])
        return core.pack_forward_weights(options, r2, w2), False
    if how == "without_w":  # packed without inputWeight, op given one (or the reverse)
        G, D = GATES[spec["cell"]], 2 if spec["desc"]["bidirectional"] else 1
        w2 = None if w is not None else np.zeros((D * G * spec["H"], spec["I"]), spec["dtype"])
        return core.pack_forward_weights(options, r, w2), False
    if how == "junk":
        return "packed", False
    raise KeyError(how)


def run_pack_case(spec: dict[str, Any]) -> dict[str, Any]:
    """pack_forward_weights(options, recurrentWeight, inputWeight) with one mutation."""
    core = core_module()
    mut = spec.get("mut") or {}
    kind, target = mut.get("kind"), mut.get("label")
    arrays = make_arrays({**spec, "grad": False, "given": []}, graph=False)
    r, w = arrays["recurrentWeight"], arrays.get("inputWeight")
    pick = np.random.default_rng(spec["seed"] + 1)
    values: dict[str, Any] = {"recurrentWeight": r, "inputWeight": w}
    options: Any = core_options(core, spec)
    if kind in ("shape", "rank") and values.get(target) is not None:
        values[target] = _reshaped(values[target], mut, pick)
    elif kind == "dtype" and values.get(target) is not None:
        values[target] = recast(values[target], mut["arg"])
    elif kind == "layout" and values.get(target) is not None:
        values[target] = relayout(values[target], mut["arg"])
    elif kind == "object":
        values[target] = non_array(mut["arg"], values.get(target))
    elif kind == "none":
        values[target] = None
    elif kind == "options_type":
        options = {"none": None, "str": "LSTM", "dict": {}}[mut["arg"]]

    # Oracle: R a real float array in its layout; W absent or the same dtype and layout.
    op = spec["cell"]
    rv, wv = values["recurrentWeight"], values["inputWeight"]
    G, D = GATES[op], 2 if spec["desc"]["bidirectional"] else 1
    ok = kind != "options_type"
    either = False
    real = (isinstance(rv, np.ndarray) and rv.dtype.kind == "f" and rv.dtype.itemsize in (4, 8)
            and rv.dtype.isnative and rv.flags.c_contiguous and rv.flags.aligned)
    if not real or rv.ndim != (3 if D == 2 else 2) or rv.shape[-1] <= 0 or rv.shape != (
            (2, G * rv.shape[-1], rv.shape[-1]) if D == 2 else (G * rv.shape[-1], rv.shape[-1])):
        ok = False
    if wv is not None and ok:
        H = rv.shape[-1]
        if not isinstance(wv, np.ndarray) or wv.dtype != rv.dtype or not (
                wv.flags.c_contiguous and wv.flags.aligned) or wv.ndim != 2 or \
                wv.shape[0] != D * G * H:
            ok = False
        elif wv.shape[1] == 0:
            either = True  # an empty inputWeight packs to nothing; rnn_forward refuses I = 0
    label = target if kind != "options_type" else "options"
    labels_ok = (label,) if label else ()
    if spec["H"] == 0:
        ok, labels_ok = False, (*labels_ok, "recurrentWeight")
    exp = Expectation("either" if ok and either else "accept" if ok else "reject",
                      (op, "pack_forward_weights"), labels_ok or None)

    def call() -> dict[str, Any]:
        result = core.pack_forward_weights(options, rv, wv)
        return {"packed": type(result).__name__}

    out = verdict(exp, call, None, spec["dtype"])
    if out["cls"] == "ok":
        try:
            got = call()
        except BaseException as error:  # noqa: BLE001 - accepted once already
            return {"cls": "insane_output", "why": f"second call raised {error!r}"}
        if got != {"packed": "PackedWeights"}:
            return {"cls": "insane_output", "why": f"returned {got}"}
    return out


# -- the options classes ----------------------------------------------------------------------
def run_options_case(spec: dict[str, Any]) -> dict[str, Any]:
    core = core_module()
    cell = spec["cell"]
    cls = getattr(core, OPTIONS_CLASS[cell])
    kwargs = {k: _py_value(v) for k, v in spec["kwargs"].items()}
    args = [_py_value(v) for v in spec.get("args", [])]
    known = set(FLAGS[cell]) | set(ACTIVATIONS[cell])
    bad: list[str] = []
    either = False
    for key, value in kwargs.items():
        if key not in known:
            bad.append(key)
        elif key in FLAGS[cell]:
            if isinstance(value, np.bool_):
                either = True  # pybind11 takes NumPy's bool as a bool
            elif type(value) is not bool:
                bad.append(key)
        elif isinstance(value, (bool, np.integer)):
            # an int subclass or an integer scalar: pybind11 may take it as an int
            if not 0 <= int(value) <= 4:
                bad.append(key)
            either = True
        elif type(value) is not int or not 0 <= value <= 4:
            bad.append(key)
    expect = "reject" if bad or args else "either" if either else "accept"
    names = (cls.__name__, cell)
    exp = Expectation(expect, names, tuple(bad) or None)

    def call() -> dict[str, Any]:
        o = cls(*args, **kwargs)
        return {"options": o}

    out = verdict(exp, call, None, "float32")
    if out["cls"] != "ok" or expect == "either":
        return out
    o = cls(**kwargs)
    defaults = {"activation": 1 if cell == "singleGateRNN" else 2,
                "inputGateActivation": 3, "forgetGateActivation": 3, "cellGateActivation": 2,
                "outputGateActivation": 3 if cell == "LSTM" else 2, "updateGateActivation": 3,
                "resetGateActivation": 3}
    for key in known:
        want = kwargs.get(key, False if key in FLAGS[cell] else defaults[key])
        got = getattr(o, key)
        if got != want or type(got) is not (bool if key in FLAGS[cell] else int):
            return {"cls": "insane_output", "why": f"{key}={got!r}, expected {want!r}"}
    if (cls.op, cls.gradient_op, cls.gates) != (cell, cell + "Gradients", GATES[cell]):
        return {"cls": "insane_output", "why": f"class attributes {cls.op, cls.gates}"}
    if not repr(o).startswith(cls.__name__ + "("):
        return {"cls": "insane_output", "why": f"repr {repr(o)!r}"}
    return out
