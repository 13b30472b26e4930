"""Map single-layer ``torch.nn.RNN`` / ``LSTM`` / ``GRU`` to rnngraph layout.

Layout of the result follows SPEC.md section 1 (shapes) and section 3 (gate
orders):

* ``torch.nn.RNN``: ``weight_ih`` -> inputWeight, ``weight_hh`` ->
  recurrentWeight, bias = ``b_ih + b_hh``.
* ``torch.nn.LSTM``: torch's ``[i, f, g, o]`` is rnngraph's default
  ``[i, f, z, o]``; bias = ``b_ih + b_hh``.
* ``torch.nn.GRU``: torch's ``[r, z, n]`` is rnngraph's
  ``resetGateFirst=True`` order ``[r, z, o]`` with ``resetAfter=True`` and
  ``flipZ=False``; bias = ``[b_ir + b_hr, b_iz + b_hz, b_in]`` and
  secondaryBias = ``b_hn``.

Bidirectional modules stack recurrentWeight as ``[2, G*H, H]`` (forward,
reverse), concatenate inputWeight rows ``[fwd; reverse]`` into ``[2*G*H, I]``
and concatenate bias / secondaryBias.

All arrays are returned as NumPy float64. ``torch`` itself is not imported
here: the functions only read attributes of the module passed in.
"""

import numpy as np

__all__ = [
    "gru_params_from_torch",
    "lstm_params_from_torch",
    "rnn_params_from_torch",
    "state_from_torch",
    "torch_grads_to_rnngraph",
]

#: Gates per direction (SPEC section 1) for each cell name.
_NUM_GATES = {"rnn": 1, "lstm": 4, "gru": 3}

#: Accepted spellings of the ``cell`` argument.
_CELL_ALIASES = {
    "rnn": "rnn", "singlegaternn": "rnn", "single_gate_rnn": "rnn",
    "lstm": "lstm",
    "gru": "gru",
}


def _cell_name(cell):
    """Normalise a cell name ("rnn", "singleGateRNN", "lstm", "gru")."""
    key = str(cell).lower()
    if key not in _CELL_ALIASES:
        raise ValueError(f"unknown RNN cell {cell!r}")
    return _CELL_ALIASES[key]


def _check_module(module, cell):
    """Only single-layer modules of the named cell without LSTM projections
    are mapped."""
    num_gates = module.weight_hh_l0.shape[0] // module.hidden_size
    if num_gates != _NUM_GATES[cell]:
        raise ValueError(f"module has {num_gates} gates, not a {cell} cell")
    if module.num_layers != 1:
        raise ValueError("only single-layer torch RNN modules are supported")
    if getattr(module, "proj_size", 0):
        raise ValueError("LSTM proj_size is not supported")


def _direction_suffixes(module):
    """torch parameter suffixes: forward first, then ``_reverse``."""
    return ("", "_reverse") if module.bidirectional else ("",)


def _to_numpy(tensor):
    """Detached float64 NumPy copy of a torch tensor."""
    return tensor.detach().cpu().double().numpy().copy()


def _torch_arrays(module, *, grad=False):
    """Per-direction ``{name: array}`` for ``weight_ih``, ``bias_hh`` etc.

    With ``grad`` the parameters' ``.grad`` values are read instead of the
    parameters; a module built with ``bias=False`` yields zero biases.
    """
    hidden = module.hidden_size
    num_gates = module.weight_hh_l0.shape[0] // hidden
    directions = []
    for suffix in _direction_suffixes(module):
        arrays = {}
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            param = getattr(module, f"{name}_l0{suffix}", None)
            if param is None:
                arrays[name] = np.zeros(num_gates * hidden)
                continue
            value = param.grad if grad else param
            if value is None:
                raise ValueError(f"{name}_l0{suffix} has no gradient")
            arrays[name] = _to_numpy(value)
        directions.append(arrays)
    return directions


def _stack_directions(directions, bias_of, secondary_bias_of=None):
    """Assemble per-direction torch arrays into the rnngraph layout.

    ``bias_of(arrays)`` / ``secondary_bias_of(arrays)`` give the rnngraph
    bias (and GRU secondaryBias) of one direction.
    """
    recurrent = [arrays["weight_hh"] for arrays in directions]
    result = {
        "recurrentWeight": (np.stack(recurrent) if len(recurrent) == 2
                            else recurrent[0]),
        "inputWeight": np.concatenate([a["weight_ih"] for a in directions]),
        "bias": np.concatenate([bias_of(a) for a in directions]),
    }
    if secondary_bias_of is not None:
        result["secondaryBias"] = np.concatenate(
            [secondary_bias_of(a) for a in directions])
    return result


def _summed_bias(arrays):
    """RNN / LSTM: the combined bias ``b_ih + b_hh``."""
    return arrays["bias_ih"] + arrays["bias_hh"]


def _gru_bias(arrays):
    """GRU: ``[b_ir + b_hr, b_iz + b_hz, b_in]`` (b_hn goes to b2)."""
    hidden = arrays["bias_ih"].shape[0] // 3
    combined = arrays["bias_ih"].copy()
    combined[:2 * hidden] += arrays["bias_hh"][:2 * hidden]
    return combined


def _gru_secondary_bias(arrays):
    """GRU: secondaryBias = ``b_hn``."""
    hidden = arrays["bias_hh"].shape[0] // 3
    return arrays["bias_hh"][2 * hidden:]


def _input_bias(arrays):
    """Gradient of any combined bias: dL/d(bias) == grad of ``b_ih``.

    For RNN/LSTM the combined bias is ``b_ih + b_hh``, whose gradient equals
    the gradient of ``b_ih`` (and of ``b_hh``). For the GRU the combined
    bias is ``[b_ir + b_hr, b_iz + b_hz, b_in]``, whose gradient is
    ``[grad b_ir, grad b_iz, grad b_in]`` = grad of ``b_ih``.
    """
    return arrays["bias_ih"]


def _params_from_torch(module, cell):
    """Shared body of the three ``*_params_from_torch`` functions."""
    _check_module(module, cell)
    directions = _torch_arrays(module)
    if cell == "gru":
        return _stack_directions(directions, _gru_bias, _gru_secondary_bias)
    return _stack_directions(directions, _summed_bias)


def rnn_params_from_torch(module):
    """``torch.nn.RNN`` -> ``{recurrentWeight, inputWeight, bias}``.

    Use with ``single_gate_rnn(..., activation=module.nonlinearity)``.
    """
    return _params_from_torch(module, "rnn")


def lstm_params_from_torch(module):
    """``torch.nn.LSTM`` -> ``{recurrentWeight, inputWeight, bias}``.

    Use with the default LSTM descriptor (gate order ``[i, f, z, o]``).
    """
    return _params_from_torch(module, "lstm")


def gru_params_from_torch(module):
    """``torch.nn.GRU`` -> ``{recurrentWeight, inputWeight, bias,
    secondaryBias}``.

    Use with ``resetGateFirst=True, resetAfter=True, flipZ=False``.
    """
    return _params_from_torch(module, "gru")


def torch_grads_to_rnngraph(cell, module):
    """Map the ``.grad`` of the module's parameters to rnngraph gradients.

    ``cell`` is ``"rnn"`` (or ``"singleGateRNN"``), ``"lstm"`` or ``"gru"``.
    Returns ``{recurrentWeight, inputWeight, bias}`` gradients in the
    rnngraph layout, plus ``secondaryBias`` (= grad ``b_hn``) for the GRU.
    The bias gradient is the gradient of ``b_ih`` (see ``_input_bias``).
    """
    cell = _cell_name(cell)
    _check_module(module, cell)
    directions = _torch_arrays(module, grad=True)
    if cell == "gru":
        return _stack_directions(directions, _input_bias, _gru_secondary_bias)
    return _stack_directions(directions, _input_bias)


def state_from_torch(state):
    """torch ``h0`` / ``c0`` / ``h_n`` ``[D, N, H]`` -> rnngraph ``[N, D*H]``.

    The forward direction comes first (SPEC section 1).
    """
    state = _to_numpy(state) if hasattr(state, "detach") else np.asarray(state)
    return np.concatenate(list(state), axis=-1)
