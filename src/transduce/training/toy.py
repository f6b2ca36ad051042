"""A plain loop for the toy models of the study figures: a few hundred updates on batches
drawn in memory, no run directory. Runs (which resume, validate, keep checkpoints and
spread over processes) train through :mod:`transduce.training.engine`."""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor


def fit(optimizer: torch.optim.Optimizer, steps: int, loss_of: Callable[[], Tensor]) -> list[float]:
    """``steps`` updates by ``optimizer``, each of the loss ``loss_of()`` returns (it draws
    its own batch); returns the losses."""
    losses = []
    for _ in range(steps):
        loss = loss_of()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
