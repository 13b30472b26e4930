"""rnngraph's LSTM under DistributedDataParallel (gloo, 2 processes on this machine).

Two processes that each train on half of a batch must end with the parameters of one process
trained on the whole batch: the loss is a mean over equal halves, so DDP's average of the
ranks' gradients is the whole batch's gradient. The model is the example's
(examples/ddp_language_model.py), in float64, trained with SGD with momentum for 3 steps.

The processes are started with ``python -m torch.distributed.run --standalone`` (its
rendezvous binds a free port), and ended if they overrun TIMEOUT. Run as a script under
torchrun, this file is the worker.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "ddp_language_model.py"
TIMEOUT = 120  # seconds for one torchrun (about 5-10 s on 2 idle cores)
WORLD = 2
STEPS = 3
BATCH, LENGTH = 8, 12  # the whole batch: BATCH windows of LENGTH characters


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ddp_language_model", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train(example: ModuleType, rank: int, world: int,
          steps: int = STEPS) -> dict[str, torch.Tensor]:
    """The parameters after ``steps`` steps on this rank's share of the batch (DDP if world > 1)."""
    data = example.Windows(example.TEXT, LENGTH)
    windows = [data[i] for i in range(0, 50 * BATCH, 50)]
    inputs = torch.stack([w[0] for w in windows])
    targets = torch.stack([w[1] for w in windows])
    share = slice(rank * BATCH // world, (rank + 1) * BATCH // world)
    torch.manual_seed(1)
    model = example.LanguageModel(len(data.vocabulary), embedding=8, hidden=16,
                                  dtype=torch.float64)
    trained = DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.SGD(trained.parameters(), lr=0.5, momentum=0.9)
    for _ in range(steps):
        optimizer.zero_grad()
        example.next_token_loss(trained, inputs[share], targets[share]).backward()
        optimizer.step()
    return {name: parameter.detach().clone() for name, parameter in model.named_parameters()}


def worker(out: Path) -> None:
    """One rank (under torchrun): train with DDP and save the parameters to out/rank<r>.pt."""
    torch.set_num_threads(1)  # two processes on two cores
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.save(train(load_example(), rank, dist.get_world_size()), out / f"rank{rank}.pt")
    dist.destroy_process_group()
    # As the example does: gloo's threads may still be letting go of the last collective's
    # tensors, which aborts a process whose interpreter is shutting down (torch 2.13).
    sys.stdout.flush()
    os._exit(0)


def torchrun(*arguments: str) -> str:
    """Run ``arguments`` under torchrun with WORLD processes; its output (failing on a
    non-zero exit or after TIMEOUT, with the output)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(WORLD), *arguments]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(command, cwd=ROOT, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        # SIGTERM: torchrun ends its workers (each runs in a session of its own), then itself.
        process.terminate()
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        raise AssertionError(f"torchrun did not finish in {TIMEOUT} s:\n{output}") from None
    assert process.returncode == 0, f"torchrun exited with {process.returncode}:\n{output}"
    return output


def test_ddp_matches_one_process_on_the_whole_batch(tmp_path: Path) -> None:
    torchrun(__file__, str(tmp_path))
    ranks = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(WORLD)]
    alone = train(load_example(), 0, 1)
    assert ranks[0].keys() == alone.keys()
    for name in alone:
        assert torch.equal(ranks[0][name], ranks[1][name]), f"{name}: the ranks differ"
    initial = train(load_example(), 0, 1, steps=0)
    moved = min((alone[name] - initial[name]).abs().max().item() for name in alone)
    assert moved > 1e-3, "training left a parameter where it started"
    difference = max((ranks[0][name] - alone[name]).abs().max().item() for name in alone)
    print(f"max |DDP parameter - one-process parameter| after {STEPS} steps: {difference:.3e}")
    assert difference <= 1e-12


def test_example_trains_under_torchrun() -> None:
    output = torchrun(str(EXAMPLE), "--steps", "4", "--batch-size", "8", "--seq-len", "16",
                      "--hidden", "32")
    lines = re.findall(r"^step +\d+ +loss (\S+)$", output, re.MULTILINE)
    losses = [float(loss) for loss in lines]
    assert len(losses) == 4, output
    assert all(0 < loss < 10 for loss in losses), output
    assert re.search(r"^throughput: [\d,]+ tokens/s", output, re.MULTILINE), output


if __name__ == "__main__":
    worker(Path(sys.argv[1]))
