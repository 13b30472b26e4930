"""The benchmark rows of docs/BENCHMARKS.md, as data, and the FLOP convention: rows 1-15 in
float32, and rows 16-19, the float64 twins of train rows 7, 8, 12 and 13."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


@dataclass(frozen=True)
class Row:
    id: int
    cell: str  # "LSTM", "GRU" or "RNN" (single gate, tanh)
    T: int
    N: int
    I: int
    H: int
    bidirectional: bool
    mode: str  # "infer" or "train"
    origin: str
    resetAfter: bool = True  # GRU only: True = PyTorch's / ONNX linear_before_reset=1
    onednn_ms: str | None = None  # published oneDNN 2.6 median, 2 threads (context only)
    dtype: str = "float32"

    @property
    def label(self) -> str:
        if self.cell == "GRU":
            name = "GRU resetAfter" if self.resetAfter else "GRU reset-before"
        else:
            name = "RNN tanh" if self.cell == "RNN" else "LSTM"
        return name + (" float64" if self.dtype == "float64" else "")

    @property
    def shape(self) -> str:
        return f"T{self.T} N{self.N} I{self.I} H{self.H}{' bi' if self.bidirectional else ''}"

    @property
    def has_torch_twin(self) -> bool:
        return not (self.cell == "GRU" and not self.resetAfter)

    def flop(self) -> float:
        """oneDNN benchdnn's count: forward = 2·G·H·N·(I+H)·T per direction; train = 3×."""
        directions = 2 if self.bidirectional else 1
        forward = 2 * GATES[self.cell] * self.H * self.N * (self.I + self.H) * self.T * directions
        return float(forward * (3 if self.mode == "train" else 1))

    def onednn(self, threads) -> float | None:
        """The published oneDNN median in ms at ``threads`` (a range gives its midpoint)."""
        text = self.onednn_ms or ""
        if threads == 1:
            text = text.partition("1 thread:")[2]
        elif threads == 2:
            text = text.partition("(")[0]
        else:
            return None
        numbers = [float(v) for v in re.findall(r"\d+(?:\.\d+)?", text)]
        return sum(numbers) / len(numbers) if numbers else None

    def as_dict(self) -> dict:
        return {**asdict(self), "label": self.label, "flop": self.flop()}


ROWS = [
    Row(1, "LSTM", 63, 1, 24, 32, True, "infer", "tiny speech LSTM (per-step overhead)",
        onednn_ms="0.28 (1 thread: 0.097)"),
    Row(2, "GRU", 1, 1, 512, 512, False, "infer", "DeepBench inference (512, 1, 1)",
        onednn_ms="0.15"),
    Row(3, "LSTM", 1, 10, 1024, 512, False, "infer", "benchdnn GNMT decoder step",
        onednn_ms="0.36"),
    Row(4, "LSTM", 25, 1, 512, 512, False, "infer", "DeepBench inference (512, 1, 25)",
        onednn_ms="7.4"),
    Row(5, "LSTM", 25, 4, 1024, 1024, False, "infer", "DeepBench inference (1024, 4, 25)",
        onednn_ms="19.1"),
    Row(6, "GRU", 187, 1, 1536, 1536, False, "infer", "DeepBench inference (1536, 1, 187)",
        onednn_ms="115"),
    Row(7, "LSTM", 150, 16, 256, 256, False, "train", "DeepBench training (256, 16, 150)",
        onednn_ms="41.5"),
    Row(8, "LSTM", 25, 16, 512, 512, False, "train", "DeepBench training (512, 16, 25)",
        onednn_ms="26.0"),
    Row(9, "RNN", 50, 16, 1760, 1760, False, "train", "DeepBench training (1760, 16, 50)",
        onednn_ms="141"),
    Row(10, "LSTM", 50, 64, 500, 500, False, "train", 'benchdnn "pytorch_testcase"',
        onednn_ms="180"),
    Row(11, "LSTM", 20, 128, 256, 256, True, "train", "benchdnn GNMT encoder, bidirectional",
        onednn_ms="84"),
    Row(12, "GRU", 35, 32, 500, 500, False, "train", "common PyTorch RNN benchmark size",
        onednn_ms="52.6"),
    Row(13, "LSTM", 25, 64, 1024, 1024, False, "train", "DeepBench training (1024, 64, 25)",
        onednn_ms="261–301"),
    Row(14, "GRU", 50, 32, 1760, 1760, False, "train", "benchdnn DeepSpeech2 LBR-GRU",
        onednn_ms="784"),
    Row(15, "GRU", 35, 32, 500, 500, False, "train", "MPSGraph's default GRU (no PyTorch twin)",
        resetAfter=False, onednn_ms="51.8"),
    # float64: PyTorch's .double() LSTM leaves oneDNN for its generic path; oneDNN has no f64 RNN.
    Row(16, "LSTM", 150, 16, 256, 256, False, "train", "row 7 in float64", dtype="float64"),
    Row(17, "LSTM", 25, 16, 512, 512, False, "train", "row 8 in float64", dtype="float64"),
    Row(18, "GRU", 35, 32, 500, 500, False, "train", "row 12 in float64", dtype="float64"),
    Row(19, "LSTM", 25, 64, 1024, 1024, False, "train", "row 13 in float64", dtype="float64"),
]
BY_ID = {row.id: row for row in ROWS}

# --quick: the small rows: infer (LSTM uni/bi, GRU resetAfter), train (LSTM, GRU reset-before).
QUICK_ROWS = (1, 2, 3, 4, 8, 15)


def parse_rows(text: str) -> list[Row]:
    """'1,2,5-7' -> rows 1, 2, 5, 6, 7."""
    ids = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    unknown = [i for i in ids if i not in BY_ID]
    if unknown:
        raise SystemExit(f"--rows: no such row(s) {unknown}; rows are 1..{len(ROWS)}")
    return [BY_ID[i] for i in dict.fromkeys(ids)]
