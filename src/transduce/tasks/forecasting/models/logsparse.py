"""The LogSparse Transformer: decoder-only, with convolutional queries and keys and a sparse
attention pattern (``model: logsparse``; Li et al. 2019)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from transduce.checks import at_least, one_of
from transduce.nn.forecasting.logsparse import PATTERNS, LogSparseForecaster
from transduce.tasks.forecasting.models.base import NeuralConfig


@dataclass(frozen=True, kw_only=True)
class LogSparseConfig(NeuralConfig):
    NAME: ClassVar[str] = "logsparse"
    READS_KNOWN: ClassVar[bool] = True
    DECODER: ClassVar[bool] = False  # decoder-only: its layers are the encoder's count

    kernel: int = 3
    pattern: str = "logsparse"
    window: int = 0
    restart: int = 0
    sparse: bool = True
    calendar: bool = True
    HELP: ClassVar[dict[str, str]] = {
        **NeuralConfig.HELP,
        "kernel": "steps of the causal convolution that makes queries and keys (1: the "
        "canonical attention; more: compare local shapes)",
        "pattern": "which earlier steps each step attends to: logsparse (itself and 1, 2, 4, "
        "… back), local (the window steps up to itself, then exponentially "
        "beyond), restart (LogSparse within subsequences of restart steps) or full",
        "window": "the local pattern's dense window (steps)",
        "restart": "the restart pattern's subsequence length (steps)",
        "sparse": "attend on the pattern's cells only, in O(L log L) memory (false: compute "
        "every score and mask them, as dense attention does)",
        "calendar": "read hour, weekday, day and year-day features of each step",
    }

    def problems(self, run):
        found = super().problems(run) + at_least(self, 1, "kernel")
        found += one_of(self, "pattern", PATTERNS)
        if self.pattern == "local":
            found += at_least(self, 1, "window")
        if self.pattern == "restart":
            found += at_least(self, 1, "restart")
        if self.layers.norm != "pre":
            found.append(("norm", "the logsparse model's layers are pre-norm; leave norm at pre"))
        return found

    def build_one(self, run, channels, inputs, known):
        L = self.layers
        return LogSparseForecaster(
            channels=channels,
            input_length=run.input_length,
            horizon=run.horizon,
            d_model=L.d_model,
            num_heads=L.num_heads,
            d_ff=L.d_ff,
            num_layers=L.num_encoder_layers,
            dropout=L.dropout,
            kernel=self.kernel,
            pattern=self.pattern,
            window=self.window,
            restart=self.restart,
            **self.time_features(known),
            quantiles=self.quantiles,
            sparse=self.sparse,
            **self.revin_args(),
        )
