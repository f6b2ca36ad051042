"""PatchTST: an encoder over patches of each channel's window (``model: patch``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from transduce.checks import at_least
from transduce.nn.forecasting.patch import PatchForecaster
from transduce.tasks.forecasting.models.base import (
    HEAD_DROPOUT_HELP,
    NeuralConfig,
    dropout_problems,
)


@dataclass(frozen=True, kw_only=True)
class PatchConfig(NeuralConfig):
    NAME: ClassVar[str] = "patch"
    ATTENTION: ClassVar[str | None] = "patches"
    READS_KNOWN: ClassVar[bool] = True

    patch_len: int = 16
    stride: int = 8
    head_dropout: float = 0.0
    patch_calendar: bool = False
    residual_attention: bool = False
    calendar: bool = True
    HELP: ClassVar[dict[str, str]] = {
        **NeuralConfig.HELP,
        "patch_len": "time steps per patch",
        "stride": "time steps between patch starts",
        "head_dropout": HEAD_DROPOUT_HELP,
        "patch_calendar": "add a linear map of the horizon's calendar features to the "
        "forecast (with known covariates it is always on)",
        "residual_attention": "each layer's attention scores add the previous layer's "
        "(PatchTST's res_attention, RealFormer)",
        "calendar": "add hour, weekday, day and year-day features (with known covariates or "
        "patch_calendar)",
    }

    def problems(self, run):
        found = super().problems(run) + at_least(self, 1, "patch_len", "stride")
        found += dropout_problems(self)
        if self.patch_calendar and not self.calendar:
            found.append(
                (
                    "patch_calendar",
                    "patch_calendar is for the patch model with "
                    "calendar=true; set patch_calendar=false",
                )
            )
        if self.patch_len > run.input_length:
            found.append(
                ("patch_len", f"patch_len={self.patch_len} exceeds input_length={run.input_length}")
            )
        return found

    def build_one(self, run, channels, inputs, known):
        return PatchForecaster(
            channels=channels,
            input_length=run.input_length,
            horizon=run.horizon,
            patch_len=self.patch_len,
            stride=self.stride,
            num_layers=self.layers.num_encoder_layers,
            head_dropout=self.head_dropout,
            quantiles=self.quantiles,
            # the horizon's calendar and known covariates are read only with known covariates
            # or patch_calendar
            **(
                self.time_features(known)
                if known or self.patch_calendar
                else {"time_features": 0, "skip_features": 0}
            ),
            residual_attention=self.residual_attention,
            **self.layer_args(),
        )
