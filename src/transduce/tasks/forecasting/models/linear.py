"""A linear map from the window to the horizon per channel (DLinear with a trend split;
``model: linear``), a baseline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from transduce.nn.forecasting.linear import LinearForecaster
from transduce.tasks.forecasting.models.base import (
    TREND_KERNEL_HELP,
    NormalisedConfig,
    trend_kernel_problems,
)


@dataclass(frozen=True, kw_only=True)
class LinearConfig(NormalisedConfig):
    NAME: ClassVar[str] = "linear"

    trend_kernel: int = 0
    HELP: ClassVar[dict[str, str]] = {
        **NormalisedConfig.HELP,
        "trend_kernel": TREND_KERNEL_HELP,
    }

    def problems(self, run):
        return super().problems(run) + trend_kernel_problems(self, run)

    def build(self, run, channels, inputs, known):
        return LinearForecaster(
            input_length=run.input_length,
            horizon=run.horizon,
            channels=channels,
            trend_kernel=self.trend_kernel,
            **self.revin_args(),
        )
