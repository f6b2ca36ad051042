"""What every forecasting model's config shares: its tag, the checks it runs against the
whole run's settings, and its builder. Each model's config is a small frozen dataclass in a
module of its own; ``models/__init__.py`` registers it under its tag, which ``model:`` names.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from torch import nn

from transduce.checks import Problem, at_least, in_range, one_of
from transduce.data.windows import CALENDAR_FEATURES
from transduce.nn.builders import TransformerConfig

# ``run`` below is the whole run's ForecastConfig, which nests this one (not imported here:
from transduce.nn.forecasting.ensemble import Ensemble
from transduce.nn.forecasting.norms import CENTERS

# ``run`` below is the whole run's ForecastConfig, which nests this one (not imported here:
# it imports the models)
ForecastConfig = Any


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """A forecasting model's own settings. Subclasses set ``NAME`` (the tag ``model:``
    names), declare their settings as fields with a line of ``HELP`` each, add their rules
    to :meth:`problems` and build the module in :meth:`build`. ``MIXES_CHANNELS``: whether a
    channel's forecast reads the other channels (a multivariate model, as NeuralForecast
    marks them), which past-observed covariates (``inputs``) need, since they reach the
    forecast only through the other channels; see :meth:`mixes_channels`. ``READS_KNOWN``:
    whether the model reads known-future covariates.
    ``ATTENTION``: how its last layer's attention is laid out, where it has one to show
    ("steps": forecast steps over input steps; "patches": each channel's patches over each
    other; "channels": channels over channels); see :meth:`attention`."""

    NAME: ClassVar[str] = ""
    HELP: ClassVar[dict[str, str]] = {}
    MIXES_CHANNELS: ClassVar[bool] = False
    READS_KNOWN: ClassVar[bool] = False
    ATTENTION: ClassVar[str | None] = None
    name: str = field(default="", init=False)  # the tag, written with the settings

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.NAME)

    def problems(self, run: ForecastConfig) -> list[Problem]:
        """(key, what is wrong) for values this model cannot be built or trained with."""
        return []

    def time_features(self, known: int) -> dict:
        """How many columns of x_time and y_time the model reads and how many it skips: the
        calendar's (data.windows.CALENDAR_FEATURES) first, read where the model has
        ``calendar`` on, then the ``known`` covariates."""
        if getattr(self, "calendar", False):
            return {"time_features": CALENDAR_FEATURES + known, "skip_features": 0}
        return {"time_features": known, "skip_features": CALENDAR_FEATURES}

    def mixes_channels(self) -> bool:
        """Whether, with these settings, a channel's forecast reads the other channels."""
        return self.MIXES_CHANNELS

    def attention(self) -> str | None:
        """The layout of the attention these settings give (``ATTENTION``), or None where
        the model has none to show."""
        return self.ATTENTION

    def build(self, run: ForecastConfig, channels: int, inputs: int, known: int) -> nn.Module:
        """The model for ``channels`` series (forecast columns, then ``inputs`` past-observed
        covariates), with ``known`` known-future covariates beside the calendar."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class NormalisedConfig(ModelConfig):
    """A model that normalises each input window by its own statistics (RevIN)."""

    revin: bool = True
    revin_center: str = "mean"
    # RevIN's learned per-channel scale and shift after standardising; PatchTST's and
    # SparseTSF's reference code runs without them (its `affine` is 0)
    revin_affine: bool = True
    HELP: ClassVar[dict[str, str]] = {
        "revin": "normalise each input window by its own mean and deviation (RevIN)",
        "revin_center": "what RevIN subtracts: mean (the window's mean) or last (its last "
        "value, so that zero change repeats it: for series near a random "
        "walk)",
        "revin_affine": "learn a per-channel scale and shift after RevIN standardises "
        "(false: as PatchTST's and SparseTSF's reference code runs; for "
        "sparse, whose map has no bias, the window's mean subtracted and "
        "added back, the paper's normalisation)",
    }

    def problems(self, run: ForecastConfig) -> list[Problem]:
        found = one_of(self, "revin_center", CENTERS)
        if not self.revin and not self.revin_affine:
            found.append(
                (
                    "revin_affine",
                    "revin_affine is RevIN's learned map, and "
                    "revin=false turns RevIN off; set "
                    "revin_affine=true or revin=true",
                )
            )
        return found

    def revin_args(self) -> dict:
        return dict(
            revin=self.revin, revin_center=self.revin_center, revin_affine=self.revin_affine
        )


@dataclass(frozen=True, kw_only=True)
class NeuralConfig(NormalisedConfig):
    """A model built of the Transformer's layers: their sizes, quantile outputs and
    deep-ensemble members."""

    layers: TransformerConfig = TransformerConfig(
        d_model=16,
        num_heads=4,
        d_ff=128,
        num_encoder_layers=3,
        num_decoder_layers=1,
        dropout=0.3,
        norm="pre",
    )
    # quantile levels forecast beside the point (e.g. [0.1, 0.5, 0.9])
    quantiles: tuple[float, ...] = ()
    # models trained side by side, forecasting their mean
    members: int = 1
    HELP: ClassVar[dict[str, str]] = {
        **NormalisedConfig.HELP,
        "quantiles": "quantile levels to forecast beside the point forecast, e.g. "
        "0.1,0.5,0.9 (pinball loss; none: point only)",
        "members": "train this many copies from different initial weights side by side and "
        "forecast their mean (a deep ensemble: steadier across seeds; each step "
        "costs members × as much)",
        "layers.src_vocab_size": "unused by forecasting",
        "layers.tgt_vocab_size": "unused by forecasting",
        "layers.tie_output": "unused by forecasting",
        "layers.pad_id": "unused by forecasting",
        "layers.max_len": "unused: positions cover input_length + horizon",
        "layers.norm": "post, pre, or batch (patch model only)",
    }
    DECODER: ClassVar[bool] = False  # whether the layers include a decoder

    def problems(self, run: ForecastConfig) -> list[Problem]:
        found = super().problems(run)
        found += one_of(self.layers, "norm", ("post", "pre", "batch"))
        if self.layers.norm == "batch" and self.DECODER:
            found.append(("norm", "norm=batch is for the patch model; use post or pre"))
        found += self.layers.problems(decoder=self.DECODER)
        defaults = TransformerConfig()
        for key in ("src_vocab_size", "tgt_vocab_size", "tie_output", "pad_id", "max_len"):
            if getattr(self.layers, key) != getattr(defaults, key):
                why = (
                    "its positions cover input_length + horizon"
                    if key == "max_len"
                    else "a translation setting"
                )
                found.append(
                    (
                        f"layers.{key}",
                        f"layers.{key} is not read by forecasting ({why}); leave it out",
                    )
                )
        found += at_least(self, 1, "members")
        q = self.quantiles
        if any(not 0 < level < 1 for level in q) or list(q) != sorted(set(q)):
            found.append(
                ("quantiles", f"quantiles must be increasing levels between 0 and 1, not {list(q)}")
            )
        return found

    def build(self, run: ForecastConfig, channels: int, inputs: int, known: int) -> nn.Module:
        if self.members > 1:
            one = dataclasses.replace(self, members=1)
            return Ensemble([one.build(run, channels, inputs, known) for _ in range(self.members)])
        return self.build_one(run, channels, inputs, known)

    def build_one(self, run: ForecastConfig, channels: int, inputs: int, known: int) -> nn.Module:
        raise NotImplementedError

    def layer_args(self) -> dict:
        L = self.layers
        return dict(
            d_model=L.d_model,
            num_heads=L.num_heads,
            d_ff=L.d_ff,
            dropout=L.dropout,
            attention_dropout=L.attention_dropout,
            activation_dropout=L.activation_dropout,
            norm=L.norm,
            activation=L.activation,
            **self.revin_args(),
        )


# settings two models share, said once
TREND_KERNEL_HELP = (
    "split each window into its moving average over this many steps and the "
    "rest, one map for each (DLinear: 25; 0: one map)"
)
HEAD_DROPOUT_HELP = "dropout before the forecasting head"


def trend_kernel_problems(config, run: ForecastConfig) -> list[Problem]:
    """A moving-average split must fit the input window."""
    return in_range(config, "trend_kernel", 0, run.input_length, high_included=True)


def dropout_problems(config) -> list[Problem]:
    return in_range(config, "head_dropout", 0, 1)
