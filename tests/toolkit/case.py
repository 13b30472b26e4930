"""``Case``: one configuration of one cell, whose id spells every non-default choice.

Id grammar (tokens joined by "-", in this order; defaults are omitted):

====================  =====================================================================
token                 meaning (default when absent)
====================  =====================================================================
fwd / reverse / bi /  direction; always present. ``reverse+bi``: both flags set (SPEC: the
reverse+bi            op ignores reverse when bidirectional)
forgetGateLast        LSTM flag; ``resetGateFirst``, ``resetAfter``, ``flipZ``: GRU flags
<slot>=<activation>   an activation slot off its default: ``act`` (singleGateRNN, LSTM's
                      ``activation``), LSTM ``i f z o``, GRU ``z r o`` (SPEC's gate letters)
noW / nobias          inputWeight / bias absent (present)
h0, h0[1,N,DH]        initState as [N,DH] / [1,N,DH] (absent); ``c0``: initCell (LSTM)
peephole,             LSTM peephole as [D·4H] / [2,4H] (bidirectional only) (absent)
peephole[2,4H]
b2                    GRU secondaryBias [D·H] (absent)
mask[<layout>]        a 0/1 mask (both values present), e.g. ``mask[T,N,1]``; bare ``mask``
                      is [T,N,DH]; ``fracmask[...]``: values in (0, 1) plus an exact 0 and 1
                      (absent). Layout letters: T, N, DH, 1; ``[]`` is a scalar
dy+dS+dC              the non-zero cotangents (all the cell has); a missing ``dy`` means a
                      zero sourceGradient
T<n> N<n> I<n> H<n>   sizes (T3 N2 I3 H2)
float32               dtype (float64)
====================  =====================================================================
"""

from __future__ import annotations

import dataclasses
import re

import pytest

import rnngraph as rg

from . import spec

DIRECTIONS = ("fwd", "reverse", "bi", "reverse+bi")
STATE_LAYOUTS = ("[N,DH]", "[1,N,DH]")
PEEPHOLE_LAYOUTS = ("[D4H]", "[2,4H]")
MASK_DIMS = ("T", "N", "DH", "1")
SIZE_DEFAULTS = {"T": 3, "N": 2, "I": 3, "H": 2}
_FULL_LAYOUT = {"initState": "[N,DH]", "initCell": "[N,DH]", "peephole": "[D4H]",
                "mask": "[T,N,DH]"}


@dataclasses.dataclass(frozen=True)
class Case:
    cell: str
    direction: str = "fwd"
    activations: tuple = ()  # ((slot, name), ...) off their defaults; a dict is accepted,
    #                            keyed by slot or by its id token ("act", "i", "z", ...)
    forgetGateLast: bool = False
    resetGateFirst: bool = False
    resetAfter: bool = False
    flipZ: bool = False
    inputWeight: bool = True
    bias: bool = True
    initState: str | None = None  # None, "[N,DH]" or "[1,N,DH]"
    initCell: str | None = None
    peephole: str | None = None  # None, "[D4H]" or "[2,4H]"
    secondaryBias: bool = False
    mask: str | None = None  # None or a layout such as "[T,N,1]"
    fractional_mask: bool = False
    signal: str | None = None  # None: every cotangent the cell has
    T: int = 3
    N: int = 2
    I: int = 3
    H: int = 2
    dtype: str = "float64"

    def __post_init__(self):
        cell = self.cell
        if cell not in spec.CELLS:
            raise ValueError(f"unknown cell {cell!r}")
        by_token = {token: slot for slot, token in spec.SLOT_TOKENS[cell].items()}
        given = {by_token.get(slot, slot): name for slot, name in dict(self.activations).items()}
        for slot, name in given.items():
            if slot not in spec.SLOT_DEFAULTS[cell] or name not in spec.ACTIVATIONS:
                raise ValueError(f"{cell}: bad activation {slot}={name}")
        canonical = tuple((slot, given[slot]) for slot in spec.SLOTS[cell]
                          if given.get(slot, spec.SLOT_DEFAULTS[cell][slot])
                          != spec.SLOT_DEFAULTS[cell][slot])
        object.__setattr__(self, "activations", canonical)
        signal = self.signal or "+".join(spec.SIGNALS[cell])
        object.__setattr__(self, "signal", signal)
        self._validate()

    def _validate(self):
        cell = self.cell
        checks = {
            f"direction {self.direction}": self.direction in DIRECTIONS,
            f"initState {self.initState}": self.initState in (None, *STATE_LAYOUTS),
            f"initCell {self.initCell}": self.initCell in (None, *STATE_LAYOUTS),
            f"peephole {self.peephole}": self.peephole in (None, *PEEPHOLE_LAYOUTS)
            and (self.peephole != "[2,4H]" or self.bidirectional),
            f"mask {self.mask}": self.mask is None
            or all(d in MASK_DIMS for d in layout_dims(self.mask)),
            "fractional_mask without a mask": self.mask is not None or not self.fractional_mask,
            f"signal {self.signal}": _valid_signal(self.signal, spec.SIGNALS[cell]),
            f"dtype {self.dtype}": self.dtype in ("float32", "float64"),
        }
        for flag in ("forgetGateLast", "resetGateFirst", "resetAfter", "flipZ"):
            checks[f"{flag} on a {cell}"] = flag in spec.FLAGS[cell] or not getattr(self, flag)
        for label in ("initCell", "peephole", "secondaryBias"):
            checks[f"{label} on a {cell}"] = (label in spec.OPTIONAL_INPUTS[cell]
                                              or not getattr(self, label))
        problems = [what for what, ok in checks.items() if not ok]
        if problems:
            raise ValueError(f"{cell} case is not valid: {', '.join(problems)}")

    # --- derived values ----------------------------------------------------------------------
    @property
    def bidirectional(self) -> bool:
        return self.direction in ("bi", "reverse+bi")

    @property
    def reverse(self) -> bool:
        return self.direction in ("reverse", "reverse+bi")

    @property
    def D(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def G(self) -> int:
        return spec.GATES[self.cell]

    @property
    def DH(self) -> int:
        return self.D * self.H

    def activation(self, slot: str) -> str:
        """The activation (name) of a slot, defaults included."""
        return dict(self.activations).get(slot, spec.SLOT_DEFAULTS[self.cell][slot])

    @property
    def slot_activations(self) -> dict:
        return {slot: self.activation(slot) for slot in spec.SLOTS[self.cell]}

    @property
    def flags(self) -> dict:
        return {flag: getattr(self, flag) for flag in spec.FLAGS[self.cell]}

    @property
    def gates(self) -> tuple:
        return spec.gate_order(self.cell, self.flags)

    @property
    def returned(self) -> tuple:
        """SPEC section 6: the gradient labels this case's gradient op returns, in order."""
        present = {"source", "recurrentWeight", *self.given_inputs()}
        return tuple(label for label in spec.RETURNED[self.cell] if label in present)

    def given_inputs(self) -> tuple:
        """The optional inputs this case passes to the op."""
        return tuple(label for label in spec.OPTIONAL_INPUTS[self.cell] if getattr(self, label))

    def descriptor(self, **overrides):
        """The descriptor of this case (``training`` False unless overridden)."""
        properties = {"reverse": self.reverse, "bidirectional": self.bidirectional,
                      **self.flags}
        for slot, name in self.activations:
            properties[slot] = getattr(rg.RNNActivation, name)
        return spec.DESCRIPTORS[self.cell](**(properties | overrides))

    def with_all_inputs(self, **changes) -> Case:
        """A copy giving every optional input the cell takes ([N,DH] states, a [T,N,DH] 0/1
        mask, a [D·4H] or bidirectional [2,4H] peephole), then ``changes``."""
        lstm = self.cell == "LSTM"
        bidirectional = changes.get("direction", self.direction) in ("bi", "reverse+bi")
        full = {"inputWeight": True, "bias": True, "initState": "[N,DH]", "mask": "[T,N,DH]",
                "initCell": "[N,DH]" if lstm else None, "secondaryBias": self.cell == "GRU",
                "peephole": ("[2,4H]" if bidirectional else "[D4H]") if lstm else None}
        return self.but(**(full | changes))

    def but(self, **changes) -> Case:
        """A copy with some fields changed (activations merge with the current ones)."""
        if "activations" in changes:
            changes["activations"] = {**dict(self.activations), **dict(changes["activations"])}
        return dataclasses.replace(self, **changes)

    # --- the id ------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        tokens = [self.direction]
        tokens += [flag for flag, on in self.flags.items() if on]
        tokens += [f"{spec.SLOT_TOKENS[self.cell][slot]}={name}" for slot, name in self.activations]
        if not self.inputWeight:
            tokens.append("noW")
        if not self.bias:
            tokens.append("nobias")
        for label, token in (("initState", "h0"), ("initCell", "c0"), ("peephole", "peephole")):
            if getattr(self, label):
                tokens.append(_layout_token(token, getattr(self, label), label))
        if self.secondaryBias:
            tokens.append("b2")
        if self.mask:
            tokens.append(_layout_token("fracmask" if self.fractional_mask else "mask",
                                        self.mask, "mask"))
        if self.signal != "+".join(spec.SIGNALS[self.cell]):
            tokens.append(self.signal)
        tokens += [f"{k}{getattr(self, k)}" for k, v in SIZE_DEFAULTS.items()
                   if getattr(self, k) != v]
        if self.dtype == "float32":
            tokens.append("float32")
        return "-".join(tokens)

    def __str__(self) -> str:
        return self.id

    @classmethod
    def parse(cls, cell: str, text: str) -> Case:
        """The case an id spells (see the module docstring); ``Case.parse(c.cell, c.id) == c``."""
        fields, activations = {}, {}
        by_token = {token: slot for slot, token in spec.SLOT_TOKENS[cell].items()}
        for token in _split(text):
            if token in DIRECTIONS:
                fields["direction"] = token
            elif token in ("forgetGateLast", "resetGateFirst", "resetAfter", "flipZ", "b2"):
                fields["secondaryBias" if token == "b2" else token] = True
            elif "=" in token and token.split("=")[0] in by_token:
                slot_token, name = token.split("=", 1)
                activations[by_token[slot_token]] = name
            elif token in ("noW", "nobias"):
                fields["inputWeight" if token == "noW" else "bias"] = False
            elif (m := re.fullmatch(r"(h0|c0|peephole|mask|fracmask)(\[[^\]]*\])?", token)):
                name, layout = m.groups()
                label = {"h0": "initState", "c0": "initCell"}.get(name, name.replace("frac", ""))
                fields[label] = layout or _FULL_LAYOUT[label]
                if name == "fracmask":
                    fields["fractional_mask"] = True
            elif re.fullmatch(r"(dy|dS|dC)(\+(dy|dS|dC))*", token):
                fields["signal"] = token
            elif re.fullmatch(r"[TNIH]\d+", token):
                fields[token[0]] = int(token[1:])
            elif token in ("float32", "float64"):
                fields["dtype"] = token
            else:
                raise ValueError(f"{cell}: unknown token {token!r} in case id {text!r}")
        return cls(cell, activations=activations, **fields)

    def param(self, *marks):
        """This case as a pytest parameter whose id is the case id."""
        return pytest.param(self, id=self.id, marks=marks)


def cases(cell: str, *ids: str) -> list:
    """pytest parameters for case ids of one cell (each id is checked to be canonical)."""
    params = []
    for text in ids:
        case = Case.parse(cell, text)
        if case.id != text:
            raise ValueError(f"case id {text!r} is spelled {case.id!r} in canonical form")
        params.append(case.param())
    return params


def _valid_signal(signal: str, available: tuple) -> bool:
    parts = signal.split("+")
    return len(set(parts)) == len(parts) and set(parts) <= set(available)


def layout_dims(layout: str) -> list:
    """"[T,N,1]" -> ["T", "N", "1"]; "[]" -> []."""
    inner = layout.strip("[]")
    return inner.split(",") if inner else []


def _layout_token(token: str, layout: str, label: str) -> str:
    return token if layout == _FULL_LAYOUT[label] else token + layout


def _split(text: str) -> list:
    """Split on "-" outside brackets (a layout holds no "-", but keep the rule explicit)."""
    return [t for t in re.split(r"-(?![^\[]*\])", text) if t]
