"""Train a small character-level LSTM language model with DistributedDataParallel on CPUs.

The model is ``nn.Embedding → rnngraph.torch.LSTM → nn.Linear`` with a next-character
cross-entropy loss, trained on a short built-in text (nothing is downloaded) over the gloo
backend. Each step takes ``--batch-size`` windows in all, split evenly between the processes
by a DistributedSampler, so runs with 1, 2 or more processes train on the same global batches.

One machine, 2 processes::

    torchrun --nproc-per-node 2 examples/ddp_language_model.py

Two machines with K processes each (run on both; HOST is the first machine's address)::

    torchrun --nnodes 2 --nproc-per-node K --rdzv-backend c10d \\
        --rdzv-endpoint HOST:29500 examples/ddp_language_model.py

``python examples/ddp_language_model.py`` runs it as a single process.

Threads: the processes of one machine share its cores, so each sets
``torch.set_num_threads(max(1, cores // local_world_size))`` unless ``--threads N`` is given.
More threads than cores in all (torch's default is every core in every process) makes
threads wait for each other's time slices, and torchrun's own default (``OMP_NUM_THREADS=1``)
leaves cores idle when a machine has more cores than processes. rnngraph's adapter sets
rnngraph's thread count to ``torch.get_num_threads()`` at each call (and runs its parallel
sections on torch's OpenMP threads), so this one setting governs torch's layers and
rnngraph's LSTM alike (unless ``RNNGRAPH_NUM_THREADS`` is set or ``rnngraph.set_num_threads``
was called: those take precedence). ``cores`` is the CPUs this process may use (its affinity
mask, lowered to its cgroup's CPU quota).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset, DistributedSampler

import rnngraph
import rnngraph.torch

TEXT = (
    "A recurrent network reads a sequence one step at a time and carries a state from each "
    "step to the next. The long short-term memory cell keeps two states: a cell that gates "
    "let information into, forget, and read out of, and an output that the next layer sees. "
    "Its input, forget and output gates are sigmoids of the current input and the previous "
    "output; the candidate is their hyperbolic tangent. Trained on text, such a network "
    "learns which character is likely to come next: first the frequent letters, then the "
    "spaces between words, then whole words and the punctuation that ends a sentence. "
    "Data parallel training runs one copy of the model in each process, gives each copy a "
    "different part of every batch, and averages the gradients of all copies before each "
    "step of the optimizer, so that every copy takes the same step and stays the same. "
)


class Windows(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Every window of ``length + 1`` characters of ``text``: (input, next characters)."""

    def __init__(self, text: str, length: int) -> None:
        self.vocabulary = sorted(set(text))
        index = {char: i for i, char in enumerate(self.vocabulary)}
        self.codes = torch.tensor([index[char] for char in text], dtype=torch.long)
        self.length = length

    def __len__(self) -> int:
        return len(self.codes) - self.length

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        window = self.codes[i:i + self.length + 1]
        return window[:-1], window[1:]


class LanguageModel(nn.Module):
    """Embedding, one rnngraph LSTM layer (time-major) and a linear read-out to logits."""

    def __init__(self, vocabulary: int, embedding: int = 64, hidden: int = 256,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocabulary, embedding, dtype=dtype)
        self.lstm = rnngraph.torch.LSTM(embedding, hidden, dtype=dtype)
        self.head = nn.Linear(hidden, vocabulary, dtype=dtype)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """``tokens`` ``[N, T]`` → logits ``[T, N, vocabulary]``."""
        output, _ = self.lstm(self.embed(tokens.t()))
        logits: torch.Tensor = self.head(output)
        return logits


def next_token_loss(model: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of the model's predictions of ``targets`` (``[N, T]``)."""
    logits = model(inputs)
    return nn.functional.cross_entropy(logits.flatten(0, 1), targets.t().flatten())


def machine_cores() -> int:
    """The CPUs this process may use: its affinity mask, lowered to its cgroup's quota."""
    budget = rnngraph.cpu_budget()
    affinity, quota = int(budget["affinity"]), int(budget["quota"])
    return min(affinity, quota) if quota >= 1 else affinity


def parse_arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=64, help="windows per step, all ranks")
    parser.add_argument("--seq-len", type=int, default=64, help="characters per window")
    parser.add_argument("--hidden", type=int, default=256, help="LSTM hidden size")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per process (default: cores // local world size)")
    parser.add_argument("--log-every", type=int, default=1, help="print the loss every N steps")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main() -> None:
    args = parse_arguments()
    distributed = "RANK" in os.environ  # set by torchrun
    if distributed:
        dist.init_process_group("gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    threads = args.threads or max(1, machine_cores() // local_world)
    torch.set_num_threads(threads)
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} is not a multiple of {world} ranks")

    data = Windows(TEXT, args.seq_len)
    sampler: DistributedSampler[int] = DistributedSampler(
        data, num_replicas=world, rank=rank, seed=args.seed, drop_last=True)
    loader = DataLoader(data, batch_size=args.batch_size // world, sampler=sampler,
                        drop_last=True)
    torch.manual_seed(args.seed)  # the same initial weights everywhere (DDP also broadcasts)
    model: nn.Module = LanguageModel(len(data.vocabulary), hidden=args.hidden)
    if distributed:
        model = DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    if rank == 0:
        print(f"{world} process(es) x {threads} thread(s), global batch {args.batch_size} x "
              f"{args.seq_len} characters, vocabulary {len(data.vocabulary)}", flush=True)

    warmup = min(2, args.steps - 1)  # steps left out of the throughput (first-call costs)
    step, epoch, start = 0, 0, time.perf_counter()
    while step < args.steps:
        sampler.set_epoch(epoch)
        for inputs, targets in loader:
            if step == warmup:
                start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss = next_token_loss(model, inputs, targets)
            loss.backward()  # DDP averages the gradients of all ranks here
            optimizer.step()
            step += 1
            if step % args.log_every == 0 or step == args.steps:
                shown = loss.detach().clone()
                if distributed:  # the global batch's loss: the mean of the ranks' losses
                    dist.all_reduce(shown)
                    shown /= world
                if rank == 0:
                    print(f"step {step:4d}  loss {shown.item():.4f}", flush=True)
            if step == args.steps:
                break
        epoch += 1
    elapsed = time.perf_counter() - start
    tokens = (args.steps - warmup) * args.batch_size * args.seq_len
    if rank == 0:
        print(f"throughput: {tokens / elapsed:,.0f} tokens/s over {args.steps - warmup} steps "
              f"({elapsed:.2f} s; {world} process(es) x {threads} thread(s))", flush=True)
    if distributed:
        dist.destroy_process_group()
        # torch 2.13's gloo threads let go of a finished collective's tensors after it has
        # returned; one still doing so once Python has begun to shut down aborts the process
        # ("terminate called without an active exception"). So end without that shutdown.
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
