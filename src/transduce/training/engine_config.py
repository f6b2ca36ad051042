"""The training engine's settings, shared by every task's run config (its ``engine`` section)."""

from __future__ import annotations

from dataclasses import dataclass

from transduce.checks import at_least, in_range, one_of
from transduce.device import PRECISIONS


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    """How a run trains, whatever the task. Limits of 0 are off.

    Attributes:
        max_steps, max_epochs, max_minutes: budgets, checked after every update (minutes
            count training time: each update's forward and backward passes, clipping and
            optimiser step, not validation). patience: stop after this many
            validations without a better metric.
        cooldown: the last fraction of the budget over which the learning rate falls
            linearly to zero, whatever the schedule gives (0: off). The budget is the first
            of max_minutes, max_steps and max_epochs to run out, so with max_minutes the
            rate depends on how fast the machine trains.
        accumulate: batches per process per update. clip_norm: clip the gradient norm.
        valid_every: updates between validations (each writes step_N.pt); 0: at the end of
            every epoch. keep_last: step checkpoints kept. log_every: updates between rows of
            training loss, rate, learning rate and gradient norm.
        seed, precision ("auto", "bf16", "fp16", "fp32"), device ("auto", "cpu", "cuda:N",
            "mps"), threads (CPU threads per process; 0: PyTorch's default).
    """

    max_steps: int = 0
    max_epochs: int = 0
    max_minutes: float = 0.0
    patience: int = 0
    cooldown: float = 0.0
    accumulate: int = 1
    clip_norm: float = 0.0
    valid_every: int = 0
    keep_last: int = 10
    log_every: int = 100
    seed: int = 1
    precision: str = "auto"
    device: str = "auto"
    threads: int = 0

    HELP = {
        "max_steps": "stop after this many updates (0: no limit)",
        "max_epochs": "stop after this many passes over the data (0: no limit)",
        "max_minutes": "stop after this many minutes of training (the updates, their "
        "optimiser steps included); validations are not counted (0: no limit)",
        "patience": "stop after this many validations without a better metric (0: never)",
        "cooldown": "last fraction of the budget over which the learning rate falls "
        "linearly to 0 (0: off)",
        "accumulate": "batches per process summed into one update",
        "clip_norm": "clip the gradient's global norm to this (0: off)",
        "valid_every": "updates between validations, each writing step_N.pt (0: every epoch)",
        "keep_last": "step checkpoints kept (older ones are deleted)",
        "log_every": "updates between rows of loss, tokens/s, lr and gradient norm in "
        "metrics.jsonl, train.log and TensorBoard",
        "seed": "random seed of weights, batches and dropout",
        "precision": "auto (bf16 where the hardware is fast at it, else fp32), bf16, fp16 or fp32",
        "device": "auto (CUDA, then Apple MPS, then CPU), cpu, cuda, cuda:N or mps",
        "threads": "CPU threads per process (0: PyTorch's default)",
    }

    def problems(self) -> list[tuple[str, str]]:
        """(key, what is wrong) for values no run can use."""
        found = at_least(self, 1, "accumulate", "keep_last", "log_every")
        found += at_least(
            self,
            0,
            "max_steps",
            "max_epochs",
            "max_minutes",
            "patience",
            "clip_norm",
            "valid_every",
            "threads",
        )
        found += one_of(self, "precision", PRECISIONS)
        found += in_range(self, "cooldown", 0, 1, high_included=True)
        if not (self.max_steps or self.max_epochs or self.max_minutes):
            found.append(("max_steps", "set a budget: max_steps, max_epochs or max_minutes"))
        return found


# Engine keys a resumed run may change: how long, how patiently and where it trains.
EXTENDABLE = (
    "max_steps",
    "max_epochs",
    "max_minutes",
    "patience",
    "threads",
    "device",
    "log_every",
)
