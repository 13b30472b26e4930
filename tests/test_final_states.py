"""``rnn_forward(..., final_states=True)``, which the PyTorch adapter returns as h_n and c_n:
each direction's state at its last processed step, ``[D, N, H]`` as torch.nn lays it out
(SPEC.md section 4: the forward direction's at t = T−1, the reverse direction's at t = 0),
read from the sequences the same call returned; with T = 0, the initial state (zeros when
absent)."""

import numpy as np
import pytest

from rnngraph._native import core

OPTIONS = {"singleGateRNN": core.SingleGateRNNOptions, "LSTM": core.LSTMOptions,
           "GRU": core.GRUOptions}
GATES = {"singleGateRNN": 1, "LSTM": 4, "GRU": 3}


def expected(sequence, initial, D, H, reverse):
    """The final states by hand: one slice of the sequence per direction."""
    T, N, _ = sequence.shape
    if T == 0:
        given = np.zeros((N, D * H)) if initial is None else initial
        return np.stack([given[:, d * H:(d + 1) * H] for d in range(D)])
    last = [0 if d == 1 or reverse else T - 1 for d in range(D)]
    return np.stack([sequence[last[d], :, d * H:(d + 1) * H] for d in range(D)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("with_states", [False, True], ids=["zero-states", "given-states"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("T", [0, 1, 5])
@pytest.mark.parametrize("cell", OPTIONS)
def test_the_final_states_are_the_last_processed_steps(cell, T, direction, with_states, dtype):
    rng = np.random.default_rng(T)
    N, I, H = 3, 4, 5
    D = 2 if direction == "bidirectional" else 1
    G = GATES[cell]
    options = OPTIONS[cell](reverse=direction == "reverse",
                            bidirectional=direction == "bidirectional")
    inputs = {"source": rng.standard_normal((T, N, I)).astype(dtype),
              "recurrentWeight": rng.standard_normal((D, G * H, H) if D == 2
                                                     else (G * H, H)).astype(dtype),
              "inputWeight": rng.standard_normal((D * G * H, I)).astype(dtype)}
    if with_states:
        inputs["initState"] = rng.standard_normal((N, D * H)).astype(dtype)
        if cell == "LSTM":
            inputs["initCell"] = rng.standard_normal((N, D * H)).astype(dtype)
    h, c, _, h_n, c_n = core.rnn_forward(options, inputs, final_states=True)
    reverse = direction == "reverse"
    assert h_n.shape == (D, N, H) and h_n.dtype == dtype and h_n.flags.c_contiguous
    np.testing.assert_array_equal(h_n, expected(h, inputs.get("initState"), D, H, reverse))
    if cell == "LSTM":
        np.testing.assert_array_equal(c_n, expected(c, inputs.get("initCell"), D, H, reverse))
    else:
        assert c_n is None
    # Without the flag, the call returns the three sequences as before.
    assert len(core.rnn_forward(options, inputs)) == 3


def test_the_flag_must_be_a_bool():
    inputs = {"source": np.zeros((1, 1, 1)), "recurrentWeight": np.zeros((1, 1))}
    with pytest.raises(TypeError, match="final_states"):
        core.rnn_forward(core.SingleGateRNNOptions(), inputs, final_states=1)
