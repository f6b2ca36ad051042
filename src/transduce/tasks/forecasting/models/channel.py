"""Attention across channels, each embedded by a mixture of linear experts (DUET-like,
``model: channel``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from transduce.checks import at_least, in_range, one_of
from transduce.nn.forecasting.channel import EXPERT_INITS, ChannelForecaster
from transduce.tasks.forecasting.models.base import (
    HEAD_DROPOUT_HELP,
    TREND_KERNEL_HELP,
    NeuralConfig,
    dropout_problems,
    trend_kernel_problems,
)


@dataclass(frozen=True, kw_only=True)
class ChannelConfig(NeuralConfig):
    NAME: ClassVar[str] = "channel"
    ATTENTION: ClassVar[str | None] = "channels"
    MIXES_CHANNELS: ClassVar[bool] = True

    head_dropout: float = 0.0
    trend_kernel: int = 0
    experts: int = 4
    expert_init: str = "uniform"
    top_k: int = 0
    mix_channels: bool = True
    learned_mask: bool = False
    HELP: ClassVar[dict[str, str]] = {
        **NeuralConfig.HELP,
        "head_dropout": HEAD_DROPOUT_HELP,
        "trend_kernel": TREND_KERNEL_HELP,
        "experts": "linear experts whose gated mixture embeds each channel's window (DUET's "
        "temporal clustering; 1: one linear map)",
        "expert_init": "the experts' first weights, uniform (random, ±1/√input_length) or "
        "mean (each feature the window's mean, as DLinear's and DUET's code "
        "start)",
        "top_k": "0 mixes every expert by a softmax gate; k ≥ 1 sends each window to its k "
        "best experts by DUET's noisy router, with its loss that keeps the experts "
        "evenly used",
        "mix_channels": "each channel's token attends to every channel's (true) or only to "
        "its own (false: channel-independent)",
        "learned_mask": "with mix_channels=true: each window chooses which channels a "
        "channel's token attends to, the nearer in spectrum the likelier, by "
        "a learned distance (DUET's channel clustering); false: all of them",
    }

    def mixes_channels(self) -> bool:
        # channels attend to each other only with mix_channels
        return self.mix_channels

    def attention(self) -> str | None:
        # channels that attend only to themselves have nothing to show
        return self.ATTENTION if self.mix_channels else None

    def problems(self, run):
        found = super().problems(run) + one_of(self, "expert_init", EXPERT_INITS)
        found += at_least(self, 1, "experts")
        found += in_range(self, "top_k", 0, self.experts, high_included=True)
        if self.learned_mask and not self.mix_channels:
            found.append(
                (
                    "learned_mask",
                    "learned_mask is for the channel model with "
                    "mix_channels=true; set learned_mask=false",
                )
            )
        return found + dropout_problems(self) + trend_kernel_problems(self, run)

    def build_one(self, run, channels, inputs, known):
        return ChannelForecaster(
            channels=channels,
            input_length=run.input_length,
            horizon=run.horizon,
            num_layers=self.layers.num_encoder_layers,
            experts=self.experts,
            expert_init=self.expert_init,
            top_k=self.top_k,
            trend_kernel=self.trend_kernel,
            head_dropout=self.head_dropout,
            quantiles=self.quantiles,
            targets=channels - inputs,
            mix_channels=self.mix_channels,
            learned_mask=self.learned_mask,
            **self.layer_args(),
        )
