"""``RNNActivation``: MPSGraph's ``MPSGraphRNNActivation`` (SPEC.md section 2)."""

from __future__ import annotations

import enum

from rnngraph.ops.arguments import is_integer


class RNNActivation(enum.IntEnum):
    """Activation of an RNN gate. hardSigmoid is clamp(0.2·x + 0.5, 0, 1)."""

    none = 0
    relu = 1
    tanh = 2
    sigmoid = 3
    hardSigmoid = 4


def as_activation(value: object, where: str) -> RNNActivation:
    """Accept an RNNActivation or its raw value 0..4 (a Python or NumPy integer); anything
    else is an error."""
    if not is_integer(value):
        raise TypeError(f"{where}: expected an RNNActivation, got {value!r}")
    value = int(value)
    try:
        return RNNActivation(value)
    except ValueError:
        raise ValueError(
            f"{where}: expected an RNNActivation (raw values 0..4: none, relu, tanh, sigmoid, "
            f"hardSigmoid), got {value!r}"
        ) from None
