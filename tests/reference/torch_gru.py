"""A differentiable GRU written with torch operations, for every rnngraph option.

``torch.nn.GRU`` covers only rnngraph's ``resetGateFirst=True, resetAfter=True,
flipZ=False`` with sigmoid/tanh. This loop covers the rest (reset-before, ``flipZ``, both
gate orders, any activation, masks, no W, no bias, no initState, bidirectional), so torch
autograd can check GRUGradients where no library GRU exists. It follows SPEC.md section 5
line by line, like ``numpy_rnn.gru``, but in torch so that autograd gives the gradients.
"""

import torch

__all__ = ["TORCH_ACTIVATIONS", "torch_gru"]

#: SPEC section 2, in torch; hardSigmoid is clamp(0.2·x + 0.5, 0, 1), not torch's x/6 + 1/2.
TORCH_ACTIVATIONS = {
    "none": lambda v: v,
    "relu": torch.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "hardSigmoid": lambda v: torch.clamp(0.2 * v + 0.5, 0.0, 1.0),
}

#: SPEC section 2: raw activation values 0..4 in this order.
_ACTIVATION_NAMES = ("none", "relu", "tanh", "sigmoid", "hardSigmoid")


def torch_gru(x: dict, desc) -> torch.Tensor:
    """h sequence [T, N, D·H] of the GRU described by ``desc`` (an rnngraph GRUDescriptor or
    anything with its properties); ``x`` holds torch tensors by Swift label (optional ones
    may be missing)."""
    source, R = x["source"], x["recurrentWeight"]
    T, N = source.shape[:2]
    H = R.shape[-1]
    D = 2 if desc.bidirectional else 1
    act_z = TORCH_ACTIVATIONS[_ACTIVATION_NAMES[int(desc.updateGateActivation)]]
    act_r = TORCH_ACTIVATIONS[_ACTIVATION_NAMES[int(desc.resetGateActivation)]]
    act_o = TORCH_ACTIVATIONS[_ACTIVATION_NAMES[int(desc.outputGateActivation)]]
    k = {"r": 0, "z": 1, "o": 2} if desc.resetGateFirst else {"z": 0, "r": 1, "o": 2}
    directions = []
    for d in range(D):
        reverse = d == 1 if desc.bidirectional else desc.reverse
        Rd = R[d] if desc.bidirectional else R
        gates = slice(d * 3 * H, (d + 1) * 3 * H)
        if "inputWeight" in x:
            xp = source @ x["inputWeight"][gates].T
        else:
            xp = source[..., gates]
        if "bias" in x:
            xp = xp + x["bias"][gates]
        hp = (x["initState"].reshape(N, D * H)[:, d * H:(d + 1) * H] if "initState" in x
              else torch.zeros(N, H, dtype=source.dtype))
        b2 = x["secondaryBias"][d * H:(d + 1) * H] if "secondaryBias" in x else 0.0
        outputs = [None] * T
        for t in (range(T - 1, -1, -1) if reverse else range(T)):
            hm = hp
            if "mask" in x:
                hm = hp * torch.broadcast_to(x["mask"], (T, N, D * H))[t][:, d * H:(d + 1) * H]

            def block(a, g):
                return a[..., k[g] * H:(k[g] + 1) * H]

            z = act_z(block(xp[t], "z") + hm @ block(Rd.T, "z"))
            r = act_r(block(xp[t], "r") + hm @ block(Rd.T, "r"))
            if desc.resetAfter:
                o = act_o(block(xp[t], "o") + r * (hm @ block(Rd.T, "o") + b2))
            else:
                o = act_o(block(xp[t], "o") + (hm * r) @ block(Rd.T, "o"))
            hp = (1 - z) * hp + z * o if desc.flipZ else z * hp + (1 - z) * o
            outputs[t] = hp
        directions.append(torch.stack(outputs))
    return torch.cat(directions, dim=-1)
