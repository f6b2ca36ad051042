"""The last value repeated: the baseline every forecast is measured against.

Legend: B batch, L input length, H horizon, C channels.
"""

from __future__ import annotations

import torch
from torch import nn


class RepeatLast(nn.Module):
    """Baseline: every future value equals the last observed one (the random walk's
    forecast). With ``half_life`` h > 0 the last value x is pulled back towards 0, which
    on the z-scored scale the models read is the training rows' mean: k steps ahead the
    forecast is x · 0.5^(k / h), so its distance to the mean halves every h steps (an AR(1)
    around the training mean, its speed given rather than fitted: for exchange rates,
    Rogoff (1996) gives three to five years as the consensus half-life)."""

    def __init__(self, horizon: int, half_life: float = 0.0) -> None:
        super().__init__()
        self.horizon, self.half_life = horizon, half_life

    @property
    def label(self) -> str:
        return (
            f"repeat, pulled towards the training mean with half-life {self.half_life:g}"
            if self.half_life
            else "repeat"
        )

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        last = x[:, -1:]  # (B, 1, C)
        if not self.half_life:
            return last.expand(-1, self.horizon, -1).unsqueeze(-1), None  # (B, H, C, 1)
        # float32, not 64: Apple's MPS has no float64
        steps = torch.arange(1, self.horizon + 1, device=x.device, dtype=torch.float32)
        decay = (0.5 ** (steps / self.half_life)).to(x.dtype)[None, :, None]  # (1, H, 1)
        return (last * decay).unsqueeze(-1), None  # (B, H, C, 1)
