"""Per-cell facts of SPEC.md that the tests check against, each defined once.

Nothing here is read from the package: these tables are what the package must match.
"""

from __future__ import annotations

import rnngraph as rg

CELLS = ("singleGateRNN", "LSTM", "GRU")

#: SPEC section 1: gates per direction (G).
GATES = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}

#: SPEC section 2: every activation, in raw-value order 0..4.
ACTIVATIONS = ("none", "relu", "tanh", "sigmoid", "hardSigmoid")

#: SPEC section 3: each cell's activation slots (descriptor properties) and their defaults.
SLOT_DEFAULTS = {
    "singleGateRNN": {"activation": "relu"},
    "LSTM": {"inputGateActivation": "sigmoid", "forgetGateActivation": "sigmoid",
             "cellGateActivation": "tanh", "outputGateActivation": "sigmoid",
             "activation": "tanh"},
    "GRU": {"updateGateActivation": "sigmoid", "resetGateActivation": "sigmoid",
            "outputGateActivation": "tanh"},
}
SLOTS = {cell: tuple(defaults) for cell, defaults in SLOT_DEFAULTS.items()}

#: The short name of each slot in a case id: the gate's letter in SPEC section 5, or "act".
SLOT_TOKENS = {
    "singleGateRNN": {"activation": "act"},
    "LSTM": {"inputGateActivation": "i", "forgetGateActivation": "f",
             "cellGateActivation": "z", "outputGateActivation": "o", "activation": "act"},
    "GRU": {"updateGateActivation": "z", "resetGateActivation": "r",
            "outputGateActivation": "o"},
}

#: SPEC section 3: the boolean descriptor flags besides reverse / bidirectional / training.
FLAGS = {"singleGateRNN": (), "LSTM": ("forgetGateLast",),
         "GRU": ("resetGateFirst", "resetAfter", "flipZ")}

#: SPEC section 3: gate order along the G·H axis, by the flag that changes it.
GATE_ORDER = {"singleGateRNN": ("z",), "LSTM": ("i", "f", "z", "o"), "GRU": ("z", "r", "o")}
GATE_ORDER_FLAGGED = {"LSTM": ("forgetGateLast", ("i", "z", "f", "o")),
                      "GRU": ("resetGateFirst", ("r", "z", "o"))}

#: SPEC section 1: the optional inputs each forward op takes.
OPTIONAL_INPUTS = {
    "singleGateRNN": ("inputWeight", "bias", "initState", "mask"),
    "LSTM": ("inputWeight", "bias", "initState", "initCell", "mask", "peephole"),
    "GRU": ("inputWeight", "bias", "initState", "mask", "secondaryBias"),
}

#: SPEC section 6: the gradient op of each cell and what it returns, in this order, one per
#: given input.
GRADIENT_OPS = {"singleGateRNN": "singleGateRNNGradients", "LSTM": "LSTMGradients",
                "GRU": "GRUGradients"}
RETURNED = {
    "singleGateRNN": ("source", "recurrentWeight", "inputWeight", "bias", "initState"),
    "LSTM": ("source", "recurrentWeight", "inputWeight", "bias", "peephole", "initState",
             "initCell"),
    "GRU": ("source", "recurrentWeight", "inputWeight", "bias", "initState", "secondaryBias"),
}

#: SPEC section 6: the cotangents a gradient op accepts ("dy" sourceGradient, "dS"
#: stateGradient, "dC" cellGradient).
SIGNALS = {"singleGateRNN": ("dy", "dS"), "LSTM": ("dy", "dS", "dC"), "GRU": ("dy", "dS")}

#: SPEC section 2: where relu and hardSigmoid are not differentiable (0.2·x + 0.5 reaches 0
#: and 1 at x = -2.5 and 2.5).
KINKS = {"relu": (0.0,), "hardSigmoid": (-2.5, 2.5)}

#: Central differences move an input by eps = 1e-6, so a pre-activation of the small O(1)
#: test shapes moves by well under 1e-4: a 1e-3 margin keeps both points on one side of a kink.
KINK_MARGIN = 1e-3

DESCRIPTORS = {"singleGateRNN": rg.SingleGateRNNDescriptor, "LSTM": rg.LSTMDescriptor,
               "GRU": rg.GRUDescriptor}


def output_names(cell: str, training: bool, produceCell: bool = False) -> tuple:
    """SPEC section 5: the forward op's returned list."""
    if cell == "LSTM":
        if training:
            return ("h", "c", "zState")
        return ("h", "c") if produceCell else ("h",)
    return ("h", "zState") if training else ("h",)


def gate_order(cell: str, flags: dict) -> tuple:
    """SPEC section 3: the gate letters along the G·H axis for these descriptor flags."""
    flag, order = GATE_ORDER_FLAGGED.get(cell, (None, None))
    return order if flag and flags.get(flag) else GATE_ORDER[cell]
