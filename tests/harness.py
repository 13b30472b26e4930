"""The old per-cell harness API, for the test files not yet on the toolkit.

Every function here forwards to ``toolkit`` (inputs in SPEC.md layouts, the runner through
the public Graph API, the reference, the loss); new tests use ``toolkit`` and a ``Case``.
Inputs travel as dicts keyed by Swift label (``source``, ``recurrentWeight``, ...).
"""

from __future__ import annotations

import numpy as np

import toolkit
from toolkit import spec
from toolkit.runner import REFERENCES, reference_options  # noqa: F401 (re-exported)

GATES = spec.GATES
DESCRIPTORS = spec.DESCRIPTORS
GRADIENT_OPS = spec.GRADIENT_OPS


def make_inputs(cell, rng, *, T=3, N=2, I=3, H=2, bidirectional=False, inputWeight=True,
                bias=True, initState=True, initCell=True, mask=False, peephole=False,
                secondaryBias=False, dtype=np.float64, scale=0.6):
    """Random inputs in SPEC.md layouts; optional ones only where the cell has them."""
    case = toolkit.Case(
        cell, direction="bi" if bidirectional else "fwd", inputWeight=inputWeight, bias=bias,
        initState="[N,DH]" if initState else None,
        initCell="[N,DH]" if initCell and cell == "LSTM" else None,
        peephole="[D4H]" if peephole and cell == "LSTM" else None,
        secondaryBias=secondaryBias and cell == "GRU", mask="[T,N,DH]" if mask else None,
        T=T, N=N, I=I, H=H, dtype=np.dtype(dtype).name)
    return toolkit.draw_inputs(case, rng, scale=scale)


def descriptor(cell, **properties):
    return DESCRIPTORS[cell](**properties)


def forward(cell, arrays, desc):
    """Run the forward op; returns {'h', 'c', 'zState'} for the outputs it returns."""
    return toolkit.forward_op(cell, arrays, desc)


def gradients(cell, arrays, desc, sourceGradient, stateGradient=None, cellGradient=None):
    """Forward with training, then the gradient op fed the saved arrays: {label: gradient}."""
    signals = toolkit.Signals(sourceGradient, stateGradient, cellGradient)
    return toolkit.gradients_op(cell, arrays, desc, signals, wired=False)


def final(sequence, desc, H=None):
    """Each direction's last processed step: [N, D·H] (SPEC.md section 4)."""
    return toolkit.final_op(sequence, desc)


def reference_forward(cell, arrays, desc):
    return toolkit.reference_op(cell, arrays, desc)


def loss_function(cell, desc, H, sourceGradient, stateGradient=None, cellGradient=None,
                  use_reference=False):
    """L(inputs) = Σ h·dy + Σ h_final·dS (+ Σ c_final·dC), through rnngraph or the reference."""
    signals = toolkit.Signals(sourceGradient, stateGradient, cellGradient)
    return toolkit.loss_op(cell, desc, signals, "reference" if use_reference else "rnngraph")
