"""SparseTSF: one small linear map across the periods of a cycle (``model: sparse``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from transduce.checks import in_range
from transduce.nn.forecasting.sparse import SparseForecaster
from transduce.tasks.forecasting.models.base import NormalisedConfig


@dataclass(frozen=True, kw_only=True)
class SparseConfig(NormalisedConfig):
    NAME: ClassVar[str] = "sparse"

    period: int = 0  # 0: not set
    HELP: ClassVar[dict[str, str]] = {
        **NormalisedConfig.HELP,
        "period": "time steps of the series' cycle (24 for hourly data with a daily one); "
        "one small map, shared by the phases of the cycle, forecasts each phase "
        "from its own past (needed)",
    }

    def problems(self, run):
        found = super().problems(run)
        if not self.period:
            found.append(
                (
                    "period",
                    "the sparse model needs period, the time steps of the "
                    "series' cycle: e.g. period=24 for hourly data",
                )
            )
        else:
            found += in_range(self, "period", 1, run.input_length, high_included=True)
        return found

    def build(self, run, channels, inputs, known):
        return SparseForecaster(
            input_length=run.input_length,
            horizon=run.horizon,
            period=self.period,
            channels=channels,
            **self.revin_args(),
        )
