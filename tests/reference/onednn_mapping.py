"""Map rnngraph's tensors (SPEC.md section 1) to oneDNN's RNN user layouts and back.

oneDNN's gate orders are rnngraph's defaults: LSTM ``[i, f, c̃, o]`` = ``[i, f, z, o]``;
GRU ``[u, r, o]`` = ``[z, r, o]`` with ``h = u ⊙ h₋₁ + (1 − u) ⊙ o`` (flipZ false). Its GRU
applies the reset before the product (rnngraph's ``resetAfter=False``); ``lbr_gru`` applies
it after, with a fourth bias gate, the candidate's recurrent bias, which is rnngraph's
``secondaryBias``. The reverse half of ``bidirectional_concat`` stores the state made from
x[t] at dst_layer[t], as rnngraph does (SPEC section 4).

Layouts (row-major): src/dst layers ``tnc`` [T, N, C]; states ``ldnc`` [1, D, N, H];
weights ``ldigo`` [1, D, in, G, H]; bias ``ldgo`` [1, D, G (+1), H].
"""

from __future__ import annotations

import numpy as np


def weights(w: np.ndarray, D: int, G: int, H: int) -> np.ndarray:
    """inputWeight [D·G·H, I] or recurrentWeight [G·H, H] / [2, G·H, H] -> ldigo."""
    w = np.asarray(w).reshape(D, G, H, -1)
    return w.transpose(0, 3, 1, 2)[None]


def weights_back(w: np.ndarray, D: int) -> np.ndarray:
    """ldigo [1, D, in, G, H] -> rnngraph's [D·G·H, in] (one direction's [G·H, in] per d)."""
    _, _, inner, G, H = w.shape
    return w[0].transpose(0, 2, 3, 1).reshape(D, G * H, inner)


def states(s: np.ndarray, D: int) -> np.ndarray:
    """[N, D·H] (column block d is direction d) -> ldnc [1, D, N, H]."""
    N = s.shape[0]
    return np.asarray(s).reshape(N, D, -1).transpose(1, 0, 2)[None]


def states_back(s: np.ndarray) -> np.ndarray:
    """ldnc [1, D, N, H] -> [N, D·H]."""
    _, D, N, H = s.shape
    return s[0].transpose(1, 0, 2).reshape(N, D * H)


def bias(b: np.ndarray, D: int, G: int, H: int, secondary: np.ndarray | None) -> np.ndarray:
    """bias [D·G·H] (and secondaryBias [D·H] for lbr_gru) -> ldgo [1, D, G (+1), H]."""
    out = np.asarray(b).reshape(D, G, H)
    if secondary is not None:
        out = np.concatenate([out, np.asarray(secondary).reshape(D, 1, H)], axis=1)
    return out[None]


def bias_back(b: np.ndarray, G: int) -> tuple:
    """ldgo -> (bias [D·G·H], secondaryBias [D·H] or None)."""
    D, H = b.shape[1], b.shape[3]
    secondary = b[0, :, G:].reshape(D * H) if b.shape[2] > G else None
    return b[0, :, :G].reshape(D * G * H), secondary
