"""Slow, loop-based NumPy reference for the rnngraph forward ops.

This module is an independent test oracle. It is written to read like
``SPEC.md`` sections 1-5 and deliberately avoids any cleverness: it loops
over directions and over timesteps and computes one step at a time.

Public functions
----------------
``activation(name, x)``
    SPEC section 2.
``single_gate_rnn(...)``, ``lstm(...)``, ``gru(...)``
    SPEC section 5, returning dicts of NumPy arrays (``"h"``, ``"zState"``
    and, for the LSTM, ``"c"``).

Keyword names are the Swift labels used in the SPEC.

Pre-activations
---------------
Each cell function also takes ``return_preactivations=False``. When true it
returns ``(outputs, preactivations)``: ``preactivations`` maps each
activation slot of the descriptor (``"activation"`` for the single gate;
``"inputGateActivation"`` ... ``"activation"`` for the LSTM, whose
``"activation"`` entry is the cell state c it is applied to;
``"updateGateActivation"`` ... ``"outputGateActivation"`` for the GRU) to
every value passed to that slot's activation, as ``[T, N, D*H]`` laid out
like the outputs. Tests use them to keep finite differences away from the
kinks of relu and hardSigmoid.
"""

import numpy as np

__all__ = ["ACTIVATION_NAMES", "activation", "gru", "lstm", "single_gate_rnn"]

#: SPEC section 2: raw values 0..4 in this order.
ACTIVATION_NAMES = ("none", "relu", "tanh", "sigmoid", "hardSigmoid")

#: SPEC section 3: gate orders along the G*H axis.
LSTM_GATES = ("i", "f", "z", "o")
LSTM_GATES_FORGET_LAST = ("i", "z", "f", "o")
GRU_GATES = ("z", "r", "o")
GRU_GATES_RESET_FIRST = ("r", "z", "o")


# ---------------------------------------------------------------------------
# SPEC section 2: activations
# ---------------------------------------------------------------------------

def activation(name, x):
    """Apply the RNN activation ``name`` to ``x`` (SPEC section 2).

    ``name`` is one of ``ACTIVATION_NAMES`` or its raw value 0..4.
    ``hardSigmoid`` is ``clip(0.2 * x + 0.5, 0, 1)`` (pinned).
    """
    if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
        if not 0 <= name < len(ACTIVATION_NAMES):
            raise ValueError(f"invalid RNN activation raw value {name!r}")
        name = ACTIVATION_NAMES[name]
    x = np.asarray(x)
    if name == "none":
        return x.copy()
    if name == "relu":
        return np.maximum(x, 0)
    if name == "tanh":
        return np.tanh(x)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "hardSigmoid":
        return np.clip(0.2 * x + 0.5, 0, 1)
    raise ValueError(f"invalid RNN activation {name!r}")


# The cell functions take a keyword argument named ``activation`` (the Swift
# label), which shadows the module-level function inside their bodies.
_apply = activation


# ---------------------------------------------------------------------------
# Shared helpers: SPEC section 1 (shapes) and section 4 (time order)
# ---------------------------------------------------------------------------

def _num_directions(bidirectional):
    """D in SPEC section 1: 2 when bidirectional, else 1."""
    return 2 if bidirectional else 1


def _direction_is_reverse(d, reverse, bidirectional):
    """SPEC section 4: whether direction ``d`` runs t = T-1 ... 0.

    ``reverse`` is ignored when ``bidirectional`` is set (SPEC section 3);
    then direction 0 is forward and direction 1 is reverse.
    """
    if bidirectional:
        return d == 1
    return bool(reverse)


def _time_order(num_steps, is_reverse):
    """SPEC section 4: processing order of the timesteps."""
    if is_reverse:
        return range(num_steps - 1, -1, -1)
    return range(num_steps)


def _per_direction_vector(vector, d, num_dirs, width):
    """Block ``d`` of a per-direction vector (bias, peephole, b2).

    Accepts ``[D*width]`` and ``[D, width]`` (SPEC section 1, e.g. a
    bidirectional peephole ``[2,4H]`` or ``[8H]``), or ``None`` (zeros).
    """
    if vector is None:
        return 0
    return np.reshape(np.asarray(vector), (num_dirs, width))[d]


def _per_direction_columns(array, d, width):
    """Columns ``d*width:(d+1)*width`` of the last axis (SPEC section 1)."""
    return array[..., d * width:(d + 1) * width]


def _recurrent_weight(recurrent_weight, d):
    """R for direction ``d``: ``[G*H,H]`` or bidirectional ``[2,G*H,H]``."""
    recurrent_weight = np.asarray(recurrent_weight)
    if recurrent_weight.ndim == 3:
        return recurrent_weight[d]
    return recurrent_weight


def _input_projection(source, input_weight, bias, d, num_dirs, gate_width):
    """SPEC section 5: ``x'[t] = x[t]·Wᵀ + b`` (or ``source[t] + b``).

    Returns ``x'`` for direction ``d`` as ``[T, N, G*H]``.
    """
    source = np.asarray(source)
    if input_weight is None:
        projected = _per_direction_columns(source, d, gate_width)
    else:
        weight = np.asarray(input_weight)[d * gate_width:(d + 1) * gate_width]
        projected = np.stack([source[t] @ weight.T
                              for t in range(source.shape[0])])
    return projected + _per_direction_vector(bias, d, num_dirs, gate_width)


def _initial_state(init, d, num_dirs, batch, hidden, dtype):
    """h₋₁ (or c₋₁) of direction ``d``, ``[N, H]`` (SPEC section 1).

    ``None`` means zeros; ``[1, N, H]`` is accepted for ``[N, H]``; the
    bidirectional layout is ``[N, 2H]`` with columns ``0:H`` forward.
    """
    if init is None:
        return np.zeros((batch, hidden), dtype=dtype)
    init = np.asarray(init)
    if init.ndim == 3:
        init = init[0]
    init = np.broadcast_to(init, (batch, num_dirs * hidden))
    return _per_direction_columns(init, d, hidden).copy()


def _direction_mask(mask, d, num_dirs, steps, batch, hidden):
    """Mask of direction ``d`` as ``[T, N, H]``, or ``None`` (SPEC section 1).

    The mask is broadcastable to ``[T, N, D*H]``; columns ``0:H`` belong to
    the forward direction when bidirectional.
    """
    if mask is None:
        return None
    full = np.broadcast_to(np.asarray(mask), (steps, batch, num_dirs * hidden))
    return _per_direction_columns(full, d, hidden)


def _gate_blocks(array, gate_order, hidden):
    """Split the ``G*H`` axis (the first axis of R, the last of x') by gate.

    Returns ``{gate_name: block}`` following SPEC section 3's gate order.
    """
    return {gate: array[..., k * hidden:(k + 1) * hidden]
            for k, gate in enumerate(gate_order)}


def _gate_weights(recurrent_weight, gate_order, hidden):
    """Per-gate recurrent weight blocks ``R_g`` (``[H, H]`` each)."""
    return {gate: recurrent_weight[k * hidden:(k + 1) * hidden]
            for k, gate in enumerate(gate_order)}


def _run_recurrence(step, *, source, recurrentWeight, inputWeight, bias,
                    mask, initial, num_gates, reverse, bidirectional):
    """Drive one cell over all directions and timesteps (SPEC sections 4-5).

    ``initial`` maps carried state names (``"h"``, and ``"c"`` for the LSTM)
    to their init tensor (or ``None``). For every direction ``d`` and every
    ``t`` in processing order this calls::

        step(d, xp_t, R, prev, hm) -> {record_name: [N, width] array}

    where ``xp_t`` is ``x'[t]`` of direction ``d``, ``R`` its recurrent
    weight, ``prev`` the carried states from the previous processed step and
    ``hm = prev["h"] * m[t]`` (SPEC section 5). Each record is stored at
    ``out[t]`` (SPEC section 4); the records named in ``initial`` are
    carried to the next step. Per-direction records are concatenated along
    the last axis, forward block first.
    """
    source = np.asarray(source)
    hidden = np.asarray(recurrentWeight).shape[-1]
    steps, batch = source.shape[0], source.shape[1]
    num_dirs = _num_directions(bidirectional)
    gate_width = num_gates * hidden

    per_direction = []
    for d in range(num_dirs):
        xp = _input_projection(source, inputWeight, bias, d, num_dirs,
                               gate_width)
        weight = _recurrent_weight(recurrentWeight, d)
        m = _direction_mask(mask, d, num_dirs, steps, batch, hidden)
        prev = {name: _initial_state(init, d, num_dirs, batch, hidden,
                                     source.dtype)
                for name, init in initial.items()}

        records = {}
        is_reverse = _direction_is_reverse(d, reverse, bidirectional)
        for t in _time_order(steps, is_reverse):
            hm = prev["h"] if m is None else prev["h"] * m[t]
            out = step(d, xp[t], weight, prev, hm)
            for name, value in out.items():
                if name not in records:
                    records[name] = [None] * steps
                records[name][t] = value
            prev = {name: out[name] for name in initial}
        per_direction.append({name: np.stack(values)
                              for name, values in records.items()})

    return {name: np.concatenate([rec[name] for rec in per_direction],
                                 axis=-1)
            for name in per_direction[0]}


def _outputs(records, output_names, return_preactivations):
    """Split the records of ``_run_recurrence`` into the cell's outputs and,
    if asked for, the pre-activations (every other record, keyed by slot)."""
    outputs = {name: records[name] for name in output_names}
    if not return_preactivations:
        return outputs
    preactivations = {slot: value for slot, value in records.items()
                      if slot not in output_names}
    return outputs, preactivations


# ---------------------------------------------------------------------------
# SPEC section 5: the three cells
# ---------------------------------------------------------------------------

def single_gate_rnn(source, recurrentWeight, inputWeight=None, bias=None,
                    initState=None, mask=None, *, reverse=False,
                    bidirectional=False, activation="relu",
                    return_preactivations=False):
    """Single-gate RNN forward (SPEC section 5, "Single gate").

    ``z[t] = x'[t] + hm·Rᵀ``; ``h[t] = act(z[t])``.

    Returns ``{"h": [T,N,D*H], "zState": [T,N,D*H]}`` where zState holds
    the pre-activation ``z[t]`` (and, with ``return_preactivations``, the
    same values as ``{"activation": z}``; see the module docstring).
    """
    act_name = activation

    def step(d, xp_t, weight, prev, hm):
        z = xp_t + hm @ weight.T
        return {"h": _apply(act_name, z), "zState": z, "activation": z}

    records = _run_recurrence(step, source=source,
                              recurrentWeight=recurrentWeight,
                              inputWeight=inputWeight, bias=bias, mask=mask,
                              initial={"h": initState}, num_gates=1,
                              reverse=reverse, bidirectional=bidirectional)
    return _outputs(records, ("h", "zState"), return_preactivations)


def lstm(source, recurrentWeight, inputWeight=None, bias=None,
         initState=None, initCell=None, mask=None, peephole=None, *,
         reverse=False, bidirectional=False, forgetGateLast=False,
         inputGateActivation="sigmoid", forgetGateActivation="sigmoid",
         cellGateActivation="tanh", outputGateActivation="sigmoid",
         activation="tanh", return_preactivations=False):
    """LSTM forward (SPEC section 5, "LSTM")::

        a_g[t] = act_g( x'_g[t] + hm·R_gᵀ + p_g ⊙ cp )   for g in i, f, z, o
        c[t]   = a_f ⊙ cp + a_i ⊙ a_z
        h[t]   = a_o ⊙ act(c[t])

    ``cp`` is the previous (unmasked) cell. Gate order is ``[i,f,z,o]``, or
    ``[i,z,f,o]`` with ``forgetGateLast`` (SPEC section 3).

    Returns ``{"h": [T,N,D*H], "c": [T,N,D*H], "zState": [T,N,D*4H]}``;
    zState holds the activated gates in descriptor gate order, forward
    block first when bidirectional. ``return_preactivations``: see the
    module docstring.
    """
    gate_order = LSTM_GATES_FORGET_LAST if forgetGateLast else LSTM_GATES
    gate_activations = {"i": inputGateActivation, "f": forgetGateActivation,
                        "z": cellGateActivation, "o": outputGateActivation}
    gate_slots = {"i": "inputGateActivation", "f": "forgetGateActivation",
                  "z": "cellGateActivation", "o": "outputGateActivation"}
    cell_activation = activation
    num_dirs = _num_directions(bidirectional)
    hidden = np.asarray(recurrentWeight).shape[-1]

    def step(d, xp_t, weight, prev, hm):
        cp = prev["c"]
        x_gates = _gate_blocks(xp_t, gate_order, hidden)
        r_gates = _gate_weights(weight, gate_order, hidden)
        p = _per_direction_vector(peephole, d, num_dirs, 4 * hidden)
        p_gates = _gate_blocks(np.broadcast_to(p, (4 * hidden,)), gate_order,
                               hidden)
        pre = {g: x_gates[g] + hm @ r_gates[g].T + p_gates[g] * cp
               for g in gate_order}
        a = {g: _apply(gate_activations[g], pre[g]) for g in gate_order}
        c = a["f"] * cp + a["i"] * a["z"]
        h = a["o"] * _apply(cell_activation, c)
        z_state = np.concatenate([a[g] for g in gate_order], axis=-1)
        preactivations = {gate_slots[g]: pre[g] for g in gate_order}
        return {"h": h, "c": c, "zState": z_state, **preactivations,
                "activation": c}

    records = _run_recurrence(step, source=source,
                              recurrentWeight=recurrentWeight,
                              inputWeight=inputWeight, bias=bias, mask=mask,
                              initial={"h": initState, "c": initCell},
                              num_gates=4, reverse=reverse,
                              bidirectional=bidirectional)
    return _outputs(records, ("h", "c", "zState"), return_preactivations)


def gru(source, recurrentWeight, inputWeight=None, bias=None, initState=None,
        mask=None, secondaryBias=None, *, reverse=False, bidirectional=False,
        resetGateFirst=False, resetAfter=False, flipZ=False,
        updateGateActivation="sigmoid", resetGateActivation="sigmoid",
        outputGateActivation="tanh", return_preactivations=False):
    """GRU forward (SPEC section 5, "GRU")::

        z[t] = act_z( x'_z + hm·R_zᵀ )
        r[t] = act_r( x'_r + hm·R_rᵀ )
        resetAfter=False:  o[t] = act_o( x'_o + (hm ⊙ r)·R_oᵀ )
        resetAfter=True:   o[t] = act_o( x'_o + r ⊙ (hm·R_oᵀ + b2) )
        flipZ=False: h[t] = z ⊙ hp + (1 − z) ⊙ o
        flipZ=True:  h[t] = (1 − z) ⊙ hp + z ⊙ o

    ``hp`` in the blend is the unmasked previous state. ``secondaryBias``
    (b2) is used only with ``resetAfter``. Gate order is ``[z,r,o]``, or
    ``[r,z,o]`` with ``resetGateFirst`` (SPEC section 3).

    Returns ``{"h": [T,N,D*H], "zState": [T,N,D*3H]}``; zState holds the
    activated ``z, r, o`` in descriptor gate order. ``return_preactivations``:
    see the module docstring.
    """
    gate_order = GRU_GATES_RESET_FIRST if resetGateFirst else GRU_GATES
    num_dirs = _num_directions(bidirectional)
    hidden = np.asarray(recurrentWeight).shape[-1]

    def step(d, xp_t, weight, prev, hm):
        hp = prev["h"]
        x_gates = _gate_blocks(xp_t, gate_order, hidden)
        r_gates = _gate_weights(weight, gate_order, hidden)
        z_pre = x_gates["z"] + hm @ r_gates["z"].T
        r_pre = x_gates["r"] + hm @ r_gates["r"].T
        z = _apply(updateGateActivation, z_pre)
        r = _apply(resetGateActivation, r_pre)
        if resetAfter:
            b2 = _per_direction_vector(secondaryBias, d, num_dirs, hidden)
            o_pre = x_gates["o"] + r * (hm @ r_gates["o"].T + b2)
        else:
            o_pre = x_gates["o"] + (hm * r) @ r_gates["o"].T
        o = _apply(outputGateActivation, o_pre)
        if flipZ:
            h = (1 - z) * hp + z * o
        else:
            h = z * hp + (1 - z) * o
        activated = {"z": z, "r": r, "o": o}
        z_state = np.concatenate([activated[g] for g in gate_order], axis=-1)
        return {"h": h, "zState": z_state, "updateGateActivation": z_pre,
                "resetGateActivation": r_pre, "outputGateActivation": o_pre}

    records = _run_recurrence(step, source=source,
                              recurrentWeight=recurrentWeight,
                              inputWeight=inputWeight, bias=bias, mask=mask,
                              initial={"h": initState}, num_gates=3,
                              reverse=reverse, bidirectional=bidirectional)
    return _outputs(records, ("h", "zState"), return_preactivations)
