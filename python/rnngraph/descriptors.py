"""RNN descriptors with MPSGraph's ``descriptor()`` defaults (SPEC.md section 3).

Every property is checked when it is set. An op copies its descriptor when it is created,
so changing a descriptor afterwards never affects ops already built.
"""

from __future__ import annotations

import copy

from rnngraph.activation import RNNActivation, as_activation


class _Descriptor:
    """Shared machinery: typed, validated properties and copying."""

    _flags: tuple[str, ...] = ()
    _activations: dict[str, RNNActivation] = {}

    def __init__(self, **properties):
        for name in self._flags:
            object.__setattr__(self, name, False)
        for name, default in self._activations.items():
            object.__setattr__(self, name, default)
        for name, value in properties.items():
            setattr(self, name, value)

    def __setattr__(self, name, value):
        kind = type(self).__name__
        if name in self._flags:
            if not isinstance(value, bool):
                raise TypeError(f"{kind}.{name}: expected a bool, got {value!r}")
        elif name in self._activations:
            value = as_activation(value, f"{kind}.{name}")
        else:
            known = ", ".join((*self._flags, *self._activations))
            raise AttributeError(f"{kind} has no property {name!r} (properties: {known})")
        object.__setattr__(self, name, value)

    def copy(self):
        return copy.copy(self)

    def as_dict(self) -> dict:
        """Plain values for the compiled core (activations as ints)."""
        out = {name: getattr(self, name) for name in self._flags}
        out.update({name: int(getattr(self, name)) for name in self._activations})
        return out

    def __eq__(self, other):
        return type(self) is type(other) and self.as_dict() == other.as_dict()

    def __repr__(self):
        fields = []
        for name in (*self._flags, *self._activations):
            value = getattr(self, name)
            fields.append(f"{name}={value!s}" if name in self._flags else f"{name}={value.name}")
        return f"{type(self).__name__}({', '.join(fields)})"


class SingleGateRNNDescriptor(_Descriptor):
    """Options of ``singleGateRNN``: reverse, bidirectional, training, activation (relu)."""

    _flags = ("reverse", "bidirectional", "training")
    _activations = {"activation": RNNActivation.relu}


class LSTMDescriptor(_Descriptor):
    """Options of ``LSTM``. ``forgetGateLast`` gives the gate order [i, z, f, o]."""

    _flags = ("reverse", "bidirectional", "produceCell", "training", "forgetGateLast")
    _activations = {
        "inputGateActivation": RNNActivation.sigmoid,
        "forgetGateActivation": RNNActivation.sigmoid,
        "cellGateActivation": RNNActivation.tanh,
        "outputGateActivation": RNNActivation.sigmoid,
        "activation": RNNActivation.tanh,
    }


class GRUDescriptor(_Descriptor):
    """Options of ``GRU``. ``resetGateFirst`` gives the gate order [r, z, o]."""

    _flags = ("reverse", "bidirectional", "training", "resetGateFirst", "resetAfter", "flipZ")
    _activations = {
        "updateGateActivation": RNNActivation.sigmoid,
        "resetGateActivation": RNNActivation.sigmoid,
        "outputGateActivation": RNNActivation.tanh,
    }
