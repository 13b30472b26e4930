"""Draw the figures of docs/concepts.md (python3 docs/make_figures.py writes docs/img/*.png)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # a script that writes files: no display
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle

OUT = Path(__file__).resolve().parent / "img"
GATES = {"singleGateRNN": ["a"], "GRU": ["z", "r", "o"], "GRU, resetGateFirst": ["r", "z", "o"],
         "LSTM": ["i", "f", "z", "o"], "LSTM, forgetGateLast": ["i", "z", "f", "o"]}
COLOURS = {"a": "#9ecae1", "i": "#a1d99b", "f": "#fdae6b", "z": "#9ecae1", "o": "#bcbddc",
           "r": "#fc9272"}


def layouts() -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1.1, 1]})
    # Left: the gate blocks of W [G·H, I], R [G·H, H] and b [G·H], per cell.
    for row, (cell, gates) in enumerate(GATES.items()):
        y = len(GATES) - 1 - row
        left.text(-0.2, y + 0.4, cell, ha="right", va="center", fontsize=10)
        for k, gate in enumerate(gates):
            left.add_patch(Rectangle((k, y + 0.05), 0.95, 0.7, color=COLOURS[gate]))
            left.text(k + 0.47, y + 0.4, f"{gate}\nrows {k}H:{k + 1}H", ha="center", va="center",
                      fontsize=8)
    left.set_xlim(-3.2, 4.2)
    left.set_ylim(-0.2, len(GATES))
    left.axis("off")
    left.set_title("gate blocks along the G·H rows of W, R and b")
    # Right: time order of the directions.
    T = 6
    for t in range(T):
        right.add_patch(Rectangle((t, 2), 0.9, 0.8, color="#deebf7"))
        right.text(t + 0.45, 2.4, f"x[{t}]", ha="center", va="center", fontsize=8)
        right.add_patch(Rectangle((t, 1), 0.9, 0.8, color="#c7e9c0"))
        right.text(t + 0.45, 1.4, f"h[{t}, :, :H]", ha="center", va="center", fontsize=7)
        right.add_patch(Rectangle((t, 0), 0.9, 0.8, color="#fdd0a2"))
        right.text(t + 0.45, 0.4, f"h[{t}, :, H:]", ha="center", va="center", fontsize=7)
    right.add_patch(FancyArrowPatch((0, 1.9), (T - 0.1, 1.9), arrowstyle="->", mutation_scale=12))
    right.add_patch(FancyArrowPatch((T - 0.1, -0.1), (0, -0.1), arrowstyle="->", mutation_scale=12))
    right.text(T + 0.1, 1.4, "forward:\nt = 0 … T−1", va="center", fontsize=9)
    right.text(T + 0.1, 0.4, "reverse:\nt = T−1 … 0", va="center", fontsize=9)
    right.set_xlim(-0.2, T + 2.2)
    right.set_ylim(-0.5, 3.0)
    right.axis("off")
    right.set_title("bidirectional: h[t] = [forward state | reverse state] made from x[t]")
    fig.tight_layout()
    OUT.mkdir(exist_ok=True)
    fig.savefig(OUT / "layouts.png", dpi=110)


if __name__ == "__main__":
    layouts()
