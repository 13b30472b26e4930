"""Hypothesis strategies for fuzz specs (plain data; probe_fuzz_cases runs them), and
``collect``: a derandomized, bounded list of specs per layer."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from probe_fuzz_cases import (
    ACTIVATIONS,
    CELLS,
    DEFAULT_ACTIVATIONS,
    FLAGS,
    FORWARD_ONLY,
    FORWARD_OPTIONAL,
    STATES,
    labels,
)
from probe_fuzz_cases import (
    given as given_labels,
)

DTYPES = ("float32", "float64", "float16", "longdouble", "int32", "int64", "uint8", "int8",
          "bool", "complex64", "complex128", "str", "object", "datetime", "bigendian", "void")
LAYOUTS = ("noncontig", "fortran", "negstride", "negstride_last", "misaligned", "readonly",
           "broadcast", "transposed", "sliced")
OBJECTS = ("list", "ragged", "str", "bytes", "int", "float", "dict", "object", "tuple", "set",
           "complex", "memoryview", "none")
NONFINITE = ("nan", "inf", "-inf")
PY_VALUES = ({"py": "object"}, {"py": "none"}, {"py": "nan"}, {"py": "np_int"},
             {"py": "np_bool"}, {"py": "float"}, {"py": "list"}, {"py": "big"}, 0, 1, -1, 5,
             "tanh", True, False, 7, 2)


def default_activation(cell: str, name: str) -> int:
    if name == "activation":
        return 1 if cell == "singleGateRNN" else 2
    if name == "outputGateActivation":
        return 3 if cell == "LSTM" else 2
    return DEFAULT_ACTIVATIONS[name]


def weighted(pairs: list[tuple[Any, float]]) -> st.SearchStrategy[Any]:
    """One of the values, with these weights. (From a wide integer drawn by Hypothesis:
    its sampled_from leans to the first value, which would skew the mix of case kinds.)"""
    values, weights = [v for v, _ in pairs], [w for _, w in pairs]
    return st.integers(0, 2**32 - 1).map(
        lambda seed: random.Random(seed).choices(values, weights=weights)[0])


@st.composite
def base_spec(draw: st.DrawFn, layer: str) -> dict[str, Any]:
    cell = draw(st.sampled_from(CELLS))
    grad = draw(st.booleans()) if layer in ("graph", "core") else False
    size_kind = draw(weighted([("small", 44), ("medium", 3), ("zeroH", 1), ("zeroI", 1),
                               ("hugeT", 1)]))
    T = draw(st.integers(0, 5))
    N = draw(st.integers(0, 4))
    I = draw(st.integers(1, 5))
    H = draw(st.integers(1, 5))
    W = draw(st.booleans())
    if size_kind == "medium":  # big enough for several threads and the packed kernels
        T, N = draw(st.integers(2, 6)), draw(st.integers(16, 64))
        I, H = draw(st.integers(8, 40)), draw(st.integers(16, 48))
    elif size_kind == "zeroH":
        H = 0
    elif size_kind == "zeroI":
        I, W = 0, True
    elif size_kind == "hugeT":  # an empty batch over 2^40 steps: must return at once
        T, N = 1 << 40, 0
    # The descriptor, the optional inputs, their layouts and the values' seed come from one
    # seeded Random: each Hypothesis draw costs tens of microseconds, and these need no
    # shrinking.
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    desc: dict[str, Any] = {flag: rnd.random() < 0.5 for flag in FLAGS[cell]}
    desc.update({act: rnd.randrange(5) for act in ACTIVATIONS[cell]})
    desc["training"] = rnd.random() < 0.5
    if cell == "LSTM":
        desc["produceCell"] = rnd.random() < 0.5
    optional = FORWARD_OPTIONAL[cell] + (() if not grad else tuple(
        lab for lab in labels({"cell": cell, "grad": True}) if lab in STATES))
    chosen = [lab for lab in optional if lab != "inputWeight" and rnd.random() < 0.5]
    desc_none = layer == "graph" and rnd.random() < 0.05
    if desc_none:  # descriptor=None: the defaults
        desc = {flag: False for flag in (*FLAGS[cell], "training")}
        desc.update({act: default_activation(cell, act) for act in ACTIVATIONS[cell]})
        if cell == "LSTM":
            desc["produceCell"] = False
    spec = {"layer": layer, "cell": cell, "grad": grad, "dtype": draw(
        st.sampled_from(("float32", "float64"))), "T": T, "N": N, "I": I, "H": H, "W": W,
        "desc": desc, "given": chosen, "seed": rnd.randrange(2**31), "mut": None}
    if desc_none:
        spec["desc_none"] = True
    if layer == "graph":
        spec["mode"] = rnd.choice(("feed", "dynamic", "const", "mixed")
                                  + (("chain",) if grad else ()))
        alt: dict[str, Any] = {}
        for label in chosen:
            if (label in STATES or (label == "peephole" and desc["bidirectional"])) and \
                    rnd.random() < 0.5:
                alt[label] = True
            elif label == "mask" and rnd.random() < 0.5:
                alt[label] = rnd.choice(("111", "1x1", "x11", "11x", "1x", "x", "xx", "1", "",
                                         "xxx", "x1x"))
        spec["alt"] = alt
    return spec


def target_label(draw: st.DrawFn, spec: dict[str, Any], pool: tuple[str, ...] | None = None
                 ) -> str:
    present = pool if pool is not None else given_labels(spec)
    return draw(st.sampled_from(sorted(present)))


def array_mutation(draw: st.DrawFn, spec: dict[str, Any], kind: str) -> dict[str, Any]:
    label = target_label(draw, spec)
    mut: dict[str, Any] = {"kind": kind, "label": label}
    if kind == "shape":
        mut["arg"] = draw(st.sampled_from((1, -1, 2, -100, 3)))
        mut["axis"] = draw(st.integers(0, 2))
    elif kind == "rank":
        mut["arg"] = draw(st.sampled_from(("drop", "add", "lead1")))
    elif kind == "dtype":
        mut["arg"] = draw(st.sampled_from(DTYPES))
    elif kind == "layout":
        mut["arg"] = draw(st.sampled_from(LAYOUTS))
    elif kind == "nonfinite":
        mut["arg"] = draw(st.sampled_from(NONFINITE))
    elif kind == "object":
        mut["arg"] = draw(st.sampled_from(OBJECTS))
    elif kind == "none":
        mut["label"] = draw(st.sampled_from(sorted(set(labels(spec)))))
    return mut


@st.composite
def graph_spec(draw: st.DrawFn) -> dict[str, Any]:
    spec = draw(base_spec("graph"))
    kinds = [(None, 4), ("shape", 3), ("rank", 1.5), ("feed_shape", 1), ("dtype", 2.5),
             ("placeholder_dtype", 1), ("layout", 2), ("nonfinite", 1), ("object", 1.5),
             ("none", 1), ("foreign", 0.5), ("symbolic_feed", 0.5), ("desc_type", 0.5),
             ("desc_bad_prop", 0.5), ("name", 0.5), ("run", 1), ("placeholder_dtype_bad", 0.5),
             ("placeholder_shape_bad", 0.5), ("constant_huge", 0.5), ("huge_feed", 0.5),
             ("huge_const", 0.5), ("huge_out", 0.5)]
    if spec["mode"] == "chain":
        kinds.append(("desc_mismatch", 3))
    kind = draw(weighted(kinds))
    if spec["mode"] == "chain" and kind in ("none", "foreign", "symbolic_feed"):
        kind = None  # the chain builds zState and the saved outputs itself
    mut: dict[str, Any] | None = None
    if kind in ("shape", "rank", "dtype", "layout", "nonfinite", "object", "none"):
        mut = array_mutation(draw, spec, kind)
        if kind != "none" and spec["mode"] in ("feed", "dynamic", "mixed") and draw(
                st.booleans()):
            mut["entry"] = draw(st.sampled_from(("feed", "dynamic", "const")))
    elif kind in ("feed_shape", "placeholder_dtype", "foreign", "symbolic_feed"):
        mut = {"kind": kind, "label": target_label(draw, spec)}
        if kind == "feed_shape":
            mut.update(arg=draw(st.sampled_from((1, -1, 2))), axis=draw(st.integers(0, 2)))
        if kind == "placeholder_dtype":
            mut["arg"] = "float64" if spec["dtype"] == "float32" else "float32"
    elif kind == "desc_type":
        others = tuple(c for c in CELLS if c != spec["cell"])
        mut = {"kind": kind, "arg": draw(st.sampled_from(
            (*others, "dict", "str", "int", "class")))}
    elif kind == "desc_bad_prop":
        cell = spec["cell"]
        prop = draw(st.sampled_from((*FLAGS[cell], *ACTIVATIONS[cell], "training", "bogus")))
        # (NumPy's bool is a bool to the descriptors, and NumPy's integers are raw values.)
        bad = ((1, "yes", {"py": "none"}, {"py": "np_int"}) if prop not in ACTIVATIONS[cell]
               else (-1, 5, "tanh", {"py": "float"}, {"py": "none"}, True, {"py": "big"}))
        mut = {"kind": kind, "prop": prop, "arg": draw(st.sampled_from(bad))}
    elif kind == "desc_mismatch":
        cell = spec["cell"]
        mut = {"kind": kind, "prop": draw(st.sampled_from(
            (*FLAGS[cell], *ACTIVATIONS[cell], *FORWARD_ONLY[:1 if cell != "LSTM" else 2])))}
    elif kind == "name":
        mut = {"kind": kind, "arg": draw(st.sampled_from(
            (3, {"py": "object"}, {"py": "float"}, "ok_name", "", {"py": "list"})))}
    elif kind == "run":
        mut = {"kind": kind, "arg": draw(st.sampled_from(
            ("feeds_list", "targets_none", "targets_tensor", "targets_foreign", "targets_str",
             "feed_key_str", "feed_output", "missing_feed")))}
    elif kind == "placeholder_dtype_bad":
        mut = {"kind": kind, "label": "source", "arg": draw(st.sampled_from(
            ("uint8", "complex64", "bool", "float16", "object", "nonsense", "U3")))}
    elif kind == "placeholder_shape_bad":
        mut = {"kind": kind, "label": "source", "arg": draw(st.sampled_from(
            ("negative", "float", "str", "int", "none", "bool", "nested")))}
    elif kind == "constant_huge":
        mut = {"kind": kind, "label": "c", "arg": draw(st.sampled_from(
            ([1 << 40, 1 << 10], [1 << 62, 1 << 62], [1 << 33, 4])))}
    elif kind in ("huge_feed", "huge_const"):
        # the source over 2^33 or 2^40 steps: it cannot be copied (unless the batch is empty)
        spec.update(grad=False, given=[], alt={},
                    mode="feed" if spec["mode"] == "chain" else spec["mode"])
        T = draw(st.sampled_from((1 << 33, 1 << 40)))
        N = draw(weighted([(0, 1), (spec["N"], 1), (3, 1)]))
        D = 2 if spec["desc"]["bidirectional"] else 1
        I = spec["I"] if spec["W"] else D * {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}[
            spec["cell"]] * spec["H"]
        mut = {"kind": kind, "label": "source", "arg": [T, N, I]}
    elif kind == "huge_out":
        huge_spec(spec)
    spec["mut"] = no_huge_arrays(spec, mut)
    return spec


def no_huge_arrays(spec: dict[str, Any], mut: dict[str, Any] | None) -> dict[str, Any] | None:
    """Over 2^40 steps only the empty batch exists: no mutation that would fill it."""
    if spec["T"] > 1 << 20 and mut and mut["kind"] in ("shape", "rank", "feed_shape"):
        return None
    return mut


def huge_spec(spec: dict[str, Any]) -> None:
    """A forward op whose output needs 32 GiB (or more) from inputs of a few MiB."""
    spec.update(grad=False, given=[], alt={}, W=True, T=2048, N=2048, I=1, H=2048,
                dtype="float32", huge=True)
    spec["desc"].update(bidirectional=False, training=False)
    if spec.get("mode") == "chain":
        spec["mode"] = "const"


@st.composite
def core_spec(draw: st.DrawFn) -> dict[str, Any]:
    spec = draw(base_spec("core"))
    kinds = [(None, 3), ("shape", 3), ("rank", 1.5), ("dtype", 2.5), ("layout", 2.5),
             ("nonfinite", 1), ("object", 1.5), ("none", 1), ("graph_layout", 1),
             ("unknown_label", 0.5), ("key_nonstr", 0.5), ("inputs_type", 0.5),
             ("options_type", 0.5), ("huge_out", 0.3)]
    if not spec["grad"]:
        kinds += [("training_type", 0.5), ("packed", 1.5)]
    kind = draw(weighted(kinds))
    mut: dict[str, Any] | None = None
    if kind in ("shape", "rank", "dtype", "layout", "nonfinite", "object", "none"):
        mut = array_mutation(draw, spec, kind)
    elif kind == "graph_layout":
        pool = tuple(lab for lab in given_labels(spec) if lab in STATES or lab == "mask"
                     or (lab == "peephole" and spec["desc"]["bidirectional"]))
        if pool:
            mut = {"kind": kind, "label": target_label(draw, spec, pool)}
    elif kind == "unknown_label":
        others = sorted({lab for c in CELLS for g in (False, True)
                         for lab in labels({"cell": c, "grad": g})} - set(labels(spec)))
        mut = {"kind": kind, "arg": draw(st.sampled_from((*others, "foo", "Source", "")))}
    elif kind == "key_nonstr":
        mut = {"kind": kind, "arg": draw(st.sampled_from(("int", "bytes", "none", "float")))}
    elif kind == "inputs_type":
        mut = {"kind": kind, "arg": draw(st.sampled_from(("list", "none", "tuple", "str")))}
    elif kind == "options_type":
        mut = {"kind": kind, "arg": draw(st.sampled_from(
            ("none", "dict", "str", "descriptor", "class", "other")))}
    elif kind == "training_type":
        mut = {"kind": kind, "arg": draw(st.sampled_from(
            (1, 0, {"py": "none"}, "yes", {"py": "np_bool"}, True)))}
    elif kind == "packed" and spec["H"] and spec["I"]:  # (valid weights to pack)
        mut = {"kind": kind, "arg": draw(st.sampled_from(
            ("own", "own", "other_dtype", "other_op", "other_shape", "without_w", "junk")))}
    elif kind == "huge_out":
        huge_spec(spec)
    spec["mut"] = no_huge_arrays(spec, mut)
    return spec


@st.composite
def pack_spec(draw: st.DrawFn) -> dict[str, Any]:
    spec = draw(base_spec("pack"))
    kind = draw(weighted([(None, 2), ("shape", 2), ("rank", 1), ("dtype", 2), ("layout", 2),
                          ("object", 1), ("none", 1), ("options_type", 0.5)]))
    mut: dict[str, Any] | None = None
    if kind is not None:
        label = draw(st.sampled_from(("recurrentWeight", "inputWeight") if spec["W"]
                                     else ("recurrentWeight",)))
        sub = array_mutation(draw, {**spec, "given": []}, kind) if kind != "options_type" \
            else {"kind": kind, "arg": draw(st.sampled_from(("none", "str", "dict")))}
        mut = {**sub, "label": label} if kind != "options_type" else sub
    spec["mut"] = mut
    return spec


@st.composite
def options_spec(draw: st.DrawFn) -> dict[str, Any]:
    cell = draw(st.sampled_from(CELLS))
    keys = (*FLAGS[cell], *ACTIVATIONS[cell])
    kwargs: dict[str, Any] = {}
    for key in keys:
        if draw(st.booleans()):
            good = st.booleans() if key in FLAGS[cell] else st.integers(0, 4)
            kwargs[key] = draw(st.one_of(good, good, good, st.sampled_from(PY_VALUES)))
    if draw(weighted([(False, 9), (True, 1)])):
        kwargs[draw(st.sampled_from(("training", "bogus", "Reverse", "produceCell")))] = True
    args = [draw(st.sampled_from(PY_VALUES))] if draw(weighted([(False, 19), (True, 1)])) else []
    return {"layer": "options", "cell": cell, "grad": False, "kwargs": kwargs, "args": args}


def collect(strategy: st.SearchStrategy[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``count`` specs (or a few fewer if Hypothesis sees duplicates), the same on every run:
    derandomized, no example database, generation only."""
    specs: list[dict[str, Any]] = []

    @settings(max_examples=count, derandomize=True, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)
    @given(strategy)
    def gather(spec: dict[str, Any]) -> None:
        specs.append(spec)

    gather()
    return specs


__all__ = ["collect", "core_spec", "graph_spec", "options_spec", "pack_spec"]
