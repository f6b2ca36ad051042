"""One process or many: the session a run trains in.

Processes are started by PyTorch's own launcher (``torchrun``, or
``torch.distributed.elastic`` in the tests), which sets ``WORLD_SIZE``, ``RANK`` and
``LOCAL_RANK``; this module only joins the group they form: NCCL on GPUs, gloo on CPUs.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.distributed as dist
from torch import Tensor

from transduce.device import configure, pick_device, resolve_precision
from transduce.errors import UserError


@dataclass(frozen=True)
class Session:
    """Where this process trains. ``rank`` 0 alone writes the run directory."""

    rank: int
    world: int
    device: torch.device
    precision: str

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def barrier(self) -> None:
        if self.world > 1:
            dist.barrier()

    def all_sum(self, values: list[float]) -> list[float]:
        """Element-wise sums over all processes (float64)."""
        if self.world == 1:
            return values
        t = torch.tensor(
            values, dtype=torch.float64, device=self.device if self.device.type == "cuda" else "cpu"
        )
        dist.all_reduce(t)
        return t.tolist()

    def broadcast(self, obj):
        """Rank 0's ``obj`` on every process."""
        if self.world == 1:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def gather(self, obj) -> list:
        """Every process's ``obj``, in rank order."""
        if self.world == 1:
            return [obj]
        out = [None] * self.world
        dist.all_gather_object(out, obj)
        return out


def start(device: str, precision: str) -> Session:
    """Join the process group when a launcher started several processes; pick the device
    (``cuda:LOCAL_RANK`` under a launcher with GPUs) and resolve the precision."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        dev = pick_device(device)
        configure(dev)
        return Session(0, 1, dev, resolve_precision(precision, dev))
    dev = pick_device(device)
    if dev.type == "cuda":
        dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        pick_device(str(dev))  # one-line error when the node has fewer GPUs than processes
        torch.cuda.set_device(dev)
    elif dev.type == "mps":
        raise UserError("device=mps trains in one process only; run without torchrun")
    configure(dev)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if dev.type == "cuda" else "gloo")
    return Session(dist.get_rank(), dist.get_world_size(), dev, resolve_precision(precision, dev))


def end(session: Session) -> None:
    if session.world > 1 and dist.is_initialized():
        dist.destroy_process_group()


def check_same_batches(session: Session, epoch: int, batches: Sequence[Any]) -> None:
    """Fail at once if the processes computed different batches for ``epoch``: each would
    then train on its own share of another list, they would disagree on where an epoch ends
    and their collectives would fall out of step (what a per-process random draw in a task's
    ``batches`` does)."""
    if session.world == 1:
        return
    digest = hashlib.sha256()
    for batch in batches:
        digest.update(repr(batch.tolist() if isinstance(batch, Tensor) else batch).encode())
    if len(set(session.gather(digest.hexdigest()))) > 1:
        raise RuntimeError(
            f"the {session.world} processes computed different batches for "
            f"epoch {epoch + 1}; a task's batches() must depend on the seed "
            "and the epoch only, the same in every process"
        )
