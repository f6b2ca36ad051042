"""The paper's encoder–decoder on series (``model: transformer``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from transduce.nn.forecasting.transformer import SeriesTransformer
from transduce.tasks.forecasting.models.base import NeuralConfig


@dataclass(frozen=True, kw_only=True)
class SeriesTransformerConfig(NeuralConfig):
    NAME: ClassVar[str] = "transformer"
    ATTENTION: ClassVar[str | None] = "steps"
    MIXES_CHANNELS: ClassVar[bool] = True  # every step's channels share one embedding
    READS_KNOWN: ClassVar[bool] = True
    DECODER: ClassVar[bool] = True

    label_length: int = 48
    calendar: bool = True
    HELP: ClassVar[dict[str, str]] = {
        **NeuralConfig.HELP,
        "label_length": "known time steps the decoder starts from",
        "calendar": "add hour, weekday, day and year-day features",
    }

    def problems(self, run):
        found = super().problems(run)
        if not 0 <= self.label_length <= run.input_length:
            found.append(
                (
                    "label_length",
                    f"label_length must be between 0 and input_length={run.input_length}",
                )
            )
        return found

    def build_one(self, run, channels, inputs, known):
        L = self.layers
        return SeriesTransformer(
            channels=channels,
            horizon=run.horizon,
            label_length=self.label_length,
            targets=channels - inputs,
            num_encoder_layers=L.num_encoder_layers,
            num_decoder_layers=L.num_decoder_layers,
            **self.time_features(known),
            max_len=run.input_length + run.horizon + 1,
            quantiles=self.quantiles,
            **self.layer_args(),
        )
