"""The last value, repeated, optionally pulled towards the training mean
(``model: repeat``), a baseline."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from transduce.nn.forecasting.repeat import RepeatLast
from transduce.tasks.forecasting.models.base import ModelConfig


@dataclass(frozen=True, kw_only=True)
class RepeatConfig(ModelConfig):
    NAME: ClassVar[str] = "repeat"

    # steps in which the forecast's distance to the training mean halves (0: never)
    half_life: float = 0.0
    HELP: ClassVar[dict[str, str]] = {
        "half_life": "pull the last value towards the training rows' mean, halving its "
        "distance every this many time steps (0: never, the plain last value; "
        "exchange rates: three to five years, Rogoff 1996)",
    }

    def problems(self, run):
        if not 0 <= self.half_life < math.inf:
            return [
                (
                    "half_life",
                    f"half_life must be 0 (off) or a positive number of time "
                    f"steps, not {self.half_life}",
                )
            ]
        return []

    def build(self, run, channels, inputs, known):
        return RepeatLast(run.horizon, self.half_life)
