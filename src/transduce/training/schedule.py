"""The paper's optimiser and learning-rate schedule (Vaswani et al. 2017, §5.3)."""

from __future__ import annotations

from typing import Iterable

import torch
from torch.optim.lr_scheduler import LambdaLR


def noam_rate(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lrate = factor · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), for step ≥ 1.

    It rises linearly for ``warmup`` steps, peaks at step = warmup, then decays as 1/√step.
    """
    if step < 1:
        raise ValueError(f"steps count from 1, got {step}")
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def paper_adam(params: Iterable[torch.nn.Parameter]) -> torch.optim.Adam:
    """Adam with β1 = 0.9, β2 = 0.98, ε = 1e-9; its rate is set by :func:`warmup_schedule`."""
    return torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9)


def warmup_schedule(
    optimizer: torch.optim.Optimizer, d_model: int, warmup: int = 4000, factor: float = 1.0
) -> LambdaLR:
    """A scheduler whose k-th ``step()`` call leaves the rate at :func:`noam_rate` (k + 1).

    The optimiser's base rate is the multiplier, so build it with lr = 1 (as
    :func:`paper_adam` does). The first update already uses step 1's rate.
    """
    return LambdaLR(optimizer, lambda k: noam_rate(k + 1, d_model, warmup, factor))
