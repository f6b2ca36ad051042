"""Several forecasters of one config as one: their mean forecast (``members``).

Legend: B batch, H horizon, C channels, Q quantile levels, M members.
"""

from __future__ import annotations

import torch
from torch import nn


class Ensemble(nn.Module):
    """M forecasters of one shape, trained side by side from different initial weights and
    dropout, forecasting the mean of theirs (a deep ensemble, Lakshminarayanan et al. 2017):
    the mean of M members has less of the variance one training run has across seeds.

    In training mode ``forward`` returns every member's forecast, stacked on the batch axis
    (M·B, H, C, 1 + Q), so that the loss trains each member on its own error (the error of
    the mean would couple them); in eval mode it returns the mean (B, H, C, 1 + Q), whose
    quantiles stay ordered since each member's are, and the members' mean attention.
    """

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)

    def auxiliary_loss(self):
        """The sum of the members' auxiliary losses (None where none has one): the task
        divides the whole loss by the members after."""
        found = [
            loss
            for member in self.members
            if (loss := getattr(member, "auxiliary_loss", lambda: None)()) is not None
        ]
        return sum(found) if found else None

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        outputs = [member(x, x_time, y_time, need_weights) for member in self.members]
        forecasts = torch.stack([y for y, _ in outputs])  # (M, B, H, C, 1 + Q)
        if self.training:
            return forecasts.flatten(0, 1), None
        weights = [w for _, w in outputs if w is not None]
        return forecasts.mean(0), (torch.stack(weights).mean(0) if weights else None)
