"""Probabilistic forecasts: quantile outputs and their pinball loss.

A forecaster's output is (B, H, C, 1 + Q): index 0 is the point forecast (trained on squared
error), indices 1..Q the quantiles at the run's ``quantiles`` levels (trained on the pinball
loss). How they are scored is :mod:`transduce.evaluation.quantiles`.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor


def ordered(raw: Tensor) -> Tensor:
    """Outputs (..., 1 + Q) with quantiles that cannot cross: the lowest is free, each next
    one adds a positive step (softplus)."""
    if raw.shape[-1] <= 2:
        return raw
    steps = F.softplus(raw[..., 2:])  # (..., Q - 1)
    rising = raw[..., 1:2] + torch.cat(
        [torch.zeros_like(raw[..., 1:2]), steps.cumsum(-1)], -1
    )  # (..., Q)
    return torch.cat([raw[..., :1], rising], -1)


def pinball(quantiles: Tensor, target: Tensor, levels: Sequence[float]) -> Tensor:
    """Summed pinball loss: Σ max(ρ·(y − q), (ρ − 1)·(y − q)) over values and levels.

    Args: quantiles (..., Q); target (...); levels: the Q levels ρ.
    """
    rho = torch.tensor(levels, dtype=quantiles.dtype, device=quantiles.device)
    error = target.unsqueeze(-1) - quantiles  # (..., Q)
    return torch.maximum(rho * error, (rho - 1) * error).sum()
