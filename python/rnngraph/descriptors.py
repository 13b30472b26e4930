"""RNN descriptors with MPSGraph's ``descriptor()`` defaults (SPEC.md section 3).

Every property is checked when it is set. An op copies its descriptor when it is created,
so changing a descriptor afterwards never affects ops already built.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, ClassVar

from rnngraph.activation import RNNActivation, as_activation

if TYPE_CHECKING:
    from typing_extensions import Self



class UnknownPropertyError(AttributeError, TypeError):
    """A descriptor has no such property: an AttributeError (as for any object) that is also
    the TypeError of a wrong argument, as rnngraph raises for every bad input."""

class _Descriptor:
    """Shared machinery: typed, validated properties and copying."""

    _flags: ClassVar[tuple[str, ...]] = ()
    _activations: ClassVar[dict[str, RNNActivation]] = {}

    # The properties every descriptor has; each class declares the rest.
    reverse: bool
    bidirectional: bool
    training: bool

    def __init__(self, **properties: Any) -> None:
        for name in self._flags:
            object.__setattr__(self, name, False)
        for name, default in self._activations.items():
            object.__setattr__(self, name, default)
        for name, value in properties.items():
            setattr(self, name, value)

    if not TYPE_CHECKING:  # unseen by type checkers, which then reject unknown properties

        def __setattr__(self, name, value):
            kind = type(self).__name__
            if name in self._flags:
                if not isinstance(value, bool):
                    raise TypeError(f"{kind}.{name}: expected a bool, got {value!r}")
            elif name in self._activations:
                value = as_activation(value, f"{kind}.{name}")
            else:
                known = ", ".join((*self._flags, *self._activations))
                raise UnknownPropertyError(f"{kind} has no property {name!r} (properties: {known})")
            object.__setattr__(self, name, value)

    def copy(self) -> Self:
        return copy.copy(self)

    def _validate(self) -> None:
        """Check every property again (one set around the setter, e.g. by
        ``object.__setattr__``, is refused here before it reaches the core)."""
        for name in (*self._flags, *self._activations):
            setattr(self, name, getattr(self, name))

    def as_dict(self) -> dict[str, Any]:
        """Plain values for the compiled core (activations as ints)."""
        out = {name: getattr(self, name) for name in self._flags}
        out.update({name: int(getattr(self, name)) for name in self._activations})
        return out

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        fields = []
        for name in (*self._flags, *self._activations):
            value = getattr(self, name)
            fields.append(f"{name}={value!s}" if name in self._flags else f"{name}={value.name}")
        return f"{type(self).__name__}({', '.join(fields)})"


class SingleGateRNNDescriptor(_Descriptor):
    """Options of ``singleGateRNN``: reverse, bidirectional, training, activation (relu)."""

    _flags = ("reverse", "bidirectional", "training")
    _activations: ClassVar[dict[str, RNNActivation]] = {"activation": RNNActivation.relu}

    activation: RNNActivation

    if TYPE_CHECKING:  # the keywords __init__ takes (it checks them at run time)

        def __init__(self, *, reverse: bool = False, bidirectional: bool = False,
                     training: bool = False,
                     activation: RNNActivation = RNNActivation.relu) -> None: ...


class LSTMDescriptor(_Descriptor):
    """Options of ``LSTM``. ``forgetGateLast`` gives the gate order [i, z, f, o]."""

    _flags = ("reverse", "bidirectional", "produceCell", "training", "forgetGateLast")
    _activations: ClassVar[dict[str, RNNActivation]] = {
        "inputGateActivation": RNNActivation.sigmoid,
        "forgetGateActivation": RNNActivation.sigmoid,
        "cellGateActivation": RNNActivation.tanh,
        "outputGateActivation": RNNActivation.sigmoid,
        "activation": RNNActivation.tanh,
    }

    produceCell: bool
    forgetGateLast: bool
    inputGateActivation: RNNActivation
    forgetGateActivation: RNNActivation
    cellGateActivation: RNNActivation
    outputGateActivation: RNNActivation
    activation: RNNActivation

    if TYPE_CHECKING:

        def __init__(self, *, reverse: bool = False, bidirectional: bool = False,
                     produceCell: bool = False, training: bool = False,
                     forgetGateLast: bool = False,
                     inputGateActivation: RNNActivation = RNNActivation.sigmoid,
                     forgetGateActivation: RNNActivation = RNNActivation.sigmoid,
                     cellGateActivation: RNNActivation = RNNActivation.tanh,
                     outputGateActivation: RNNActivation = RNNActivation.sigmoid,
                     activation: RNNActivation = RNNActivation.tanh) -> None: ...


class GRUDescriptor(_Descriptor):
    """Options of ``GRU``. ``resetGateFirst`` gives the gate order [r, z, o]."""

    _flags = ("reverse", "bidirectional", "training", "resetGateFirst", "resetAfter", "flipZ")
    _activations: ClassVar[dict[str, RNNActivation]] = {
        "updateGateActivation": RNNActivation.sigmoid,
        "resetGateActivation": RNNActivation.sigmoid,
        "outputGateActivation": RNNActivation.tanh,
    }

    resetGateFirst: bool
    resetAfter: bool
    flipZ: bool
    updateGateActivation: RNNActivation
    resetGateActivation: RNNActivation
    outputGateActivation: RNNActivation

    if TYPE_CHECKING:

        def __init__(self, *, reverse: bool = False, bidirectional: bool = False,
                     training: bool = False, resetGateFirst: bool = False,
                     resetAfter: bool = False, flipZ: bool = False,
                     updateGateActivation: RNNActivation = RNNActivation.sigmoid,
                     resetGateActivation: RNNActivation = RNNActivation.sigmoid,
                     outputGateActivation: RNNActivation = RNNActivation.tanh) -> None: ...
