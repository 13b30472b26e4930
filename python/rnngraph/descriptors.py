"""RNN descriptors with MPSGraph's ``descriptor()`` defaults (SPEC.md section 3).

Every property is a keyword-only argument of the constructor, with its default, and is
checked when it is set: a flag must be a bool, an activation an ``RNNActivation`` (or its raw
value 0..4), and a name that is no property of the descriptor (a typo) is refused. An op
copies its descriptor when it is created, so changing a descriptor afterwards never affects
ops already built.
"""

from __future__ import annotations

import difflib
import inspect
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from rnngraph.activation import RNNActivation, as_activation

if TYPE_CHECKING:
    from typing_extensions import Self


class UnknownPropertyError(AttributeError, TypeError):
    """A descriptor has no such property: an AttributeError (as for any object) that is also
    the TypeError of a wrong argument, as rnngraph raises for every bad input."""


class _Descriptor:
    """Shared machinery: typed, validated properties and copying.

    Each property is a keyword-only argument of the constructor, with MPSGraph's default, and
    is checked whenever it is set: a flag must be a bool and an activation an
    ``RNNActivation`` (or its raw value 0..4); a name that is no property raises
    ``AttributeError``.

    A subclass declares its properties once, as the keyword-only parameters of its
    ``__init__`` with their defaults (a bool default makes a flag, an ``RNNActivation`` one
    an activation); ``_flags``, ``_activations`` and ``_defaults`` are read from that
    signature, and ``__new__`` sets every property (the ``__init__`` only documents them)."""

    _flags: ClassVar[tuple[str, ...]] = ()
    _activations: ClassVar[dict[str, RNNActivation]] = {}
    _defaults: ClassVar[dict[str, Any]] = {}

    # The properties every descriptor has; each class declares the rest.
    reverse: bool
    bidirectional: bool
    training: bool

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        parameters = inspect.signature(cls.__init__).parameters.values()
        cls._flags = tuple(p.name for p in parameters if isinstance(p.default, bool))
        cls._activations = {p.name: p.default for p in parameters
                            if isinstance(p.default, RNNActivation)}
        cls._defaults = {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}

    def __new__(cls, *args: Any, **properties: Any) -> Self:
        """Set every property, to the given value or its default (the setter refuses an
        unknown name with the properties listed); positional arguments are refused."""
        if args:
            raise TypeError(f"{cls.__name__} takes keyword arguments only (properties: "
                            f"{cls._known()}), got {len(args)} positional")
        descriptor = super().__new__(cls)
        for name, value in {**cls._defaults, **properties}.items():
            setattr(descriptor, name, value)
        return descriptor

    @classmethod
    def _known(cls) -> str:
        return ", ".join((*cls._flags, *cls._activations))

    @classmethod
    def _unknown(cls, name: str) -> UnknownPropertyError:
        close = difflib.get_close_matches(name, (*cls._flags, *cls._activations), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return UnknownPropertyError(f"{cls.__name__} has no property {name!r}{hint}; its "
                                    f"properties: {cls._known()}")

    if not TYPE_CHECKING:  # unseen by type checkers, which then reject unknown properties

        def __setattr__(self, name, value):
            kind = type(self).__name__
            if name in self._flags:
                if isinstance(value, np.bool_):  # NumPy's bool, stored as Python's
                    value = bool(value)
                if not isinstance(value, bool):
                    raise TypeError(f"{kind}.{name}: expected a bool, got {value!r}")
            elif name in self._activations:
                value = as_activation(value, f"{kind}.{name}")
            else:
                raise self._unknown(name)
            object.__setattr__(self, name, value)

        def __delattr__(self, name):
            if name in self._defaults:
                raise AttributeError(
                    f"{type(self).__name__}.{name}: a property cannot be deleted; set it "
                    f"instead (MPSGraph's default: {self._defaults[name]!r})")
            raise self._unknown(name)

    def copy(self) -> Self:
        """The same properties in a new descriptor (no defaults filled in: a property lost
        around the checks stays lost, for ``_validate`` to name)."""
        copied = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        return copied

    def _validate(self) -> None:
        """Check every property again (one set around the setter, e.g. by
        ``object.__setattr__``, is refused here before it reaches the core)."""
        for name in (*self._flags, *self._activations):
            if name not in self.__dict__:  # lost around __delattr__ (object.__delattr__)
                raise ValueError(f"{type(self).__name__}.{name}: the property is missing; "
                                     f"set it (MPSGraph's default: {self._defaults[name]!r})")
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
    """Options of ``singleGateRNN`` and ``singleGateRNNGradients``:
    ``h[t] = activation(x'[t] + h[t-1]·Rᵀ)``.

    Its properties, each a keyword-only argument with MPSGraph's default and checked when set
    (the rules are ``_Descriptor``'s):

    Attributes:
        reverse (bool, default False): process t = T-1 … 0, storing the state made from
            x[t] at out[t]. Ignored when ``bidirectional`` is set.
        bidirectional (bool, default False): run a forward and a reverse direction; the
            outputs are ``[T, N, 2H]`` (forward half first) and the weights hold both
            directions (recurrentWeight ``[2, H, H]``, inputWeight ``[2H, I]``, bias
            ``[2H]``).
        training (bool, default False): also return zState (the pre-activation values),
            which ``singleGateRNNGradients`` takes: the op returns ``[h, zState]``.
        activation (RNNActivation, default relu): the activation of the state.

    Examples:
        >>> d = SingleGateRNNDescriptor(activation=RNNActivation.tanh, training=True)
        >>> d.reverse = True
    """

    activation: RNNActivation

    def __init__(self, *, reverse: bool = False, bidirectional: bool = False,
                 training: bool = False,
                 activation: RNNActivation = RNNActivation.relu) -> None:
        pass  # __new__ has set them (_Descriptor)


class LSTMDescriptor(_Descriptor):
    """Options of ``LSTM`` and ``LSTMGradients``: gates
    ``a_g = act_g(x'_g + h[t-1]·R_gᵀ + p_g ⊙ c[t-1])``, cell
    ``c[t] = a_f ⊙ c[t-1] + a_i ⊙ a_z`` and state ``h[t] = a_o ⊙ activation(c[t])``.

    Its properties, each a keyword-only argument with MPSGraph's default and checked when set
    (the rules are ``_Descriptor``'s):

    Attributes:
        reverse (bool, default False): process t = T-1 … 0, storing the state made from
            x[t] at out[t]. Ignored when ``bidirectional`` is set.
        bidirectional (bool, default False): run a forward and a reverse direction; the
            outputs are ``[T, N, 2H]`` (forward half first) and the weights hold both
            directions (recurrentWeight ``[2, 4H, H]``, inputWeight ``[8H, I]``, bias
            ``[8H]``).
        produceCell (bool, default False): also return the cell sequence c: ``[h, c]``.
        training (bool, default False): also return c and zState (the activated gates),
            which ``LSTMGradients`` takes: the op returns ``[h, c, zState]``, with or
            without ``produceCell``.
        forgetGateLast (bool, default False): gate order ``[i, z, f, o]`` along the 4H axis
            instead of ``[i, f, z, o]`` (z is the cell candidate, PyTorch's g).
        inputGateActivation (RNNActivation, default sigmoid): act_i, of the input gate.
        forgetGateActivation (RNNActivation, default sigmoid): act_f, of the forget gate.
        cellGateActivation (RNNActivation, default tanh): act_z, of the cell candidate.
        outputGateActivation (RNNActivation, default sigmoid): act_o, of the output gate.
        activation (RNNActivation, default tanh): applied to the cell for the state h.

    Examples:
        >>> d = LSTMDescriptor(training=True, forgetGateLast=True)
        >>> d.bidirectional = True
    """

    produceCell: bool
    forgetGateLast: bool
    inputGateActivation: RNNActivation
    forgetGateActivation: RNNActivation
    cellGateActivation: RNNActivation
    outputGateActivation: RNNActivation
    activation: RNNActivation

    def __init__(self, *, reverse: bool = False, bidirectional: bool = False,
                 produceCell: bool = False, training: bool = False,
                 forgetGateLast: bool = False,
                 inputGateActivation: RNNActivation = RNNActivation.sigmoid,
                 forgetGateActivation: RNNActivation = RNNActivation.sigmoid,
                 cellGateActivation: RNNActivation = RNNActivation.tanh,
                 outputGateActivation: RNNActivation = RNNActivation.sigmoid,
                 activation: RNNActivation = RNNActivation.tanh) -> None:
        pass  # __new__ has set them (_Descriptor)


class GRUDescriptor(_Descriptor):
    """Options of ``GRU`` and ``GRUGradients``: update gate z, reset gate r, candidate o and
    state ``h[t] = z ⊙ h[t-1] + (1 - z) ⊙ o`` (see ``flipZ``).

    Its properties, each a keyword-only argument with MPSGraph's default and checked when set
    (the rules are ``_Descriptor``'s):

    Attributes:
        reverse (bool, default False): process t = T-1 … 0, storing the state made from
            x[t] at out[t]. Ignored when ``bidirectional`` is set.
        bidirectional (bool, default False): run a forward and a reverse direction; the
            outputs are ``[T, N, 2H]`` (forward half first) and the weights hold both
            directions (recurrentWeight ``[2, 3H, H]``, inputWeight ``[6H, I]``, bias
            ``[6H]``).
        training (bool, default False): also return zState (the activated gates), which
            ``GRUGradients`` takes: the op returns ``[h, zState]``.
        resetGateFirst (bool, default False): gate order ``[r, z, o]`` along the 3H axis
            (PyTorch's) instead of ``[z, r, o]``.
        resetAfter (bool, default False): apply the reset gate after the recurrent
            product, ``o = act_o(x'_o + r ⊙ (h[t-1]·R_oᵀ + secondaryBias))`` (PyTorch's
            form), instead of ``act_o(x'_o + (r ⊙ h[t-1])·R_oᵀ)``; ``secondaryBias``
            enters only here.
        flipZ (bool, default False): ``h[t] = (1 - z) ⊙ h[t-1] + z ⊙ o`` instead of
            ``z ⊙ h[t-1] + (1 - z) ⊙ o`` (PyTorch's and ONNX's).
        updateGateActivation (RNNActivation, default sigmoid): of the update gate z.
        resetGateActivation (RNNActivation, default sigmoid): of the reset gate r.
        outputGateActivation (RNNActivation, default tanh): of the candidate o.

    Examples:
        >>> d = GRUDescriptor(resetGateFirst=True, resetAfter=True)
        >>> d.training = True
    """

    resetGateFirst: bool
    resetAfter: bool
    flipZ: bool
    updateGateActivation: RNNActivation
    resetGateActivation: RNNActivation
    outputGateActivation: RNNActivation

    def __init__(self, *, reverse: bool = False, bidirectional: bool = False,
                 training: bool = False, resetGateFirst: bool = False,
                 resetAfter: bool = False, flipZ: bool = False,
                 updateGateActivation: RNNActivation = RNNActivation.sigmoid,
                 resetGateActivation: RNNActivation = RNNActivation.sigmoid,
                 outputGateActivation: RNNActivation = RNNActivation.tanh) -> None:
        pass  # __new__ has set them (_Descriptor)
