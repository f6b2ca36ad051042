"""A forecasting model added the way the package asks (its one new file): the last value
plus a learned drift per step. Its registration is one line (see test_example_model.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from transduce.checks import in_range
from transduce.tasks.forecasting.models import ModelConfig


class Drift(nn.Module):
    """Forecasts x_L + k·d_c at step k for channel c, d learned; (B, H, C, 1) like every
    forecaster here (the point forecast and no quantiles)."""

    def __init__(self, *, horizon: int, channels: int, damping: float) -> None:
        super().__init__()
        self.drift = nn.Parameter(torch.zeros(channels))
        steps = torch.arange(1, horizon + 1, dtype=torch.float32)
        self.register_buffer("steps", steps * damping**steps, persistent=False)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        last = x[:, -1:, :]  # (B, 1, C)
        forecast = last + self.steps[None, :, None] * self.drift  # (B, H, C)
        return forecast[..., None], None


@dataclass(frozen=True, kw_only=True)
class DriftConfig(ModelConfig):
    NAME: ClassVar[str] = "drift"

    damping: float = 1.0  # each step's drift times damping^k
    HELP: ClassVar[dict[str, str]] = {"damping": "each step's drift times damping^k"}

    def problems(self, run):
        return in_range(self, "damping", 0, 1, high_included=True)

    def build(self, run, channels, inputs, known):
        return Drift(horizon=run.horizon, channels=channels, damping=self.damping)
