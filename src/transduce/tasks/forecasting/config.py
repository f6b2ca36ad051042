"""Every setting of `transduce forecast train`, and the builder of its model."""

# size: six models' settings in one config until per-model configs land (issue 69)

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass

from torch import nn

from transduce.config import (Origin, at_least, flatten, in_range, one_of, raise_problems,
                              resolve_key)
from transduce.nn.builders import TransformerConfig
from transduce.nn.forecasting.baselines import LinearForecaster, RepeatLast, SparseForecaster
from transduce.nn.forecasting.channel import EXPERT_INITS, ChannelForecaster
from transduce.nn.forecasting.models import CENTERS, Ensemble, PatchForecaster, SeriesTransformer
from transduce.training.engine_config import EXTENDABLE as ENGINE_EXTENDABLE
from transduce.training.engine_config import EngineConfig

MODELS = ("transformer", "patch", "channel", "linear", "sparse", "repeat")
NEURAL = ("transformer", "patch", "channel")  # the models with quantiles and members
POINT_LOSSES = ("mse", "mae")
# Settings only some models read, by dotted key. A YAML file shared by several models may
# hold them; given by name (a command-line item, a setting of Forecaster.fit) for a model
# that does not read them, they are refused instead of silently ignored. Keys that other
# models cannot take at any value (quantiles, members, period, ...) are refused by value
# in ForecastConfig.problems.
READ_BY = {
    "patch_len": ("patch",), "stride": ("patch",), "head_dropout": ("patch", "channel"),
    "experts": ("channel",), "mix_channels": ("channel",), "expert_init": ("channel",),
    "top_k": ("channel",),
    "label_length": ("transformer",), "layers.num_decoder_layers": ("transformer",),
    "residual_attention": ("patch",), "calendar": ("transformer", "patch"),
    "half_life": ("repeat",),
    **{key: ("transformer", "patch", "channel", "linear", "sparse")
       for key in ("revin", "revin_center", "revin_affine")},  # all but repeat
    **{f"layers.{key}": NEURAL for key in ("d_model", "num_heads", "d_ff",
                                           "num_encoder_layers", "dropout",
                                           "attention_dropout", "activation_dropout",
                                           "activation", "norm")},
    # the library's translation settings, which no forecasting model reads
    **{f"layers.{key}": () for key in ("src_vocab_size", "tgt_vocab_size", "tie_output",
                                       "pad_id", "max_len")},
}
MAX_LENGTH = 100_000  # time steps of an input window or a horizon


@dataclass(frozen=True, kw_only=True)
class ForecastConfig:
    """A forecasting run. YAML files set these keys; ``key=value`` arguments override them.

    Data: ``csv`` with a ``date_column``; ``columns`` (comma-separated, empty for every
    numeric column not named below) are forecast and read; ``inputs`` are past-observed
    covariates (read, not forecast); ``known`` are known-future covariates (read over the
    input window and the horizon: ``predict`` wants their future rows). ``split``: "auto"
    (ETT borders for ETTh*/ETTm* files, else 70/10/20), "ett_hour", "ett_minute", "ratio" or
    "rows:A,B,C" (train [0, A), validation [A, B), test [B, C)).
    ``layers``: the sizes, dropouts, activation and residual placement of the encoder (and
    decoder) layers, as the library's TransformerConfig declares them (``norm`` may also be
    "batch" for the patch model); its keys may be given bare (``d_model=16``). ``engine``:
    the training engine's settings (its keys may be given bare: ``max_epochs=10``); by
    default it validates and writes a checkpoint at the end of every epoch and keeps the one
    of lowest validation MSE.
    """

    csv: str = ""
    date_column: str = "date"
    columns: str = ""
    inputs: str = ""
    known: str = ""
    split: str = "auto"
    input_length: int = 336
    horizon: int = 96
    model: str = "patch"
    # transformer, patch and channel: the library's Transformer settings (vocabulary fields
    # unused)
    layers: TransformerConfig = TransformerConfig(
        d_model=16, num_heads=4, d_ff=128, num_encoder_layers=3, num_decoder_layers=1,
        dropout=0.3, norm="pre")
    revin: bool = True
    revin_center: str = "mean"
    # RevIN's learned per-channel scale and shift after standardising; PatchTST's and
    # SparseTSF's reference code runs without them (its `affine` is 0)
    revin_affine: bool = True
    # transformer, patch and channel: quantile levels forecast beside the point (e.g.
    # [0.1, 0.5, 0.9])
    quantiles: tuple[float, ...] = ()
    calibrate: bool = True
    # transformer, patch and channel: models trained side by side, forecasting their mean
    members: int = 1
    # patch
    patch_len: int = 16
    stride: int = 8
    head_dropout: float = 0.0
    patch_calendar: bool = False
    residual_attention: bool = False
    # linear and channel
    trend_kernel: int = 0
    # sparse (0: not set)
    period: int = 0
    # channel
    experts: int = 4
    expert_init: str = "uniform"
    top_k: int = 0
    mix_channels: bool = True
    learned_mask: bool = False
    # repeat: steps in which the forecast's distance to the training mean halves (0: never)
    half_life: float = 0.0
    # transformer
    label_length: int = 48
    calendar: bool = True
    # training: AdamW, its rate constant for lr_decay_after epochs, then multiplied by
    # lr_decay after each epoch, so epoch lr_decay_after + 1 trains at lr * lr_decay
    # (PatchTST's code, lradj type 3, is 0.9 after 4 in these terms); budgets, validation
    # and the rest in ``engine``
    batch_size: int = 128
    point_loss: str = "mse"
    lr: float = 1e-4
    lr_decay: float = 1.0
    lr_decay_after: int = 3
    weight_decay: float = 0.0
    engine: EngineConfig = EngineConfig(max_epochs=100, patience=10, seed=2021)

    KIND = "forecast"  # the kind of model its runs' checkpoints hold

    PATH_KEYS = ("csv",)  # stored absolute, so a run resumes from any directory
    HELP = {
        "csv": "the series: a CSV file with a date column",
        "date_column": "name of the date column",
        "columns": "comma-separated columns to forecast, each also an input (empty: every "
                   "numeric column not in inputs or known)",
        "inputs": "transformer and channel: comma-separated past-observed covariates, read "
                  "but not forecast",
        "known": "transformer and patch: comma-separated known-future covariates (e.g. a "
                 "planned price), read over the input and the horizon; predict needs their "
                 "future rows",
        "split": "train/validation/test borders: auto (ETT's for ETTh*/ETTm* files, else "
                 "70/10/20), ett_hour, ett_minute, ratio, or rows:A,B,C (train rows [0, A), "
                 "validation [A, B), test [B, C): e.g. a backtest before the test split)",
        "input_length": "time steps the model reads",
        "horizon": "time steps it forecasts",
        "model": "patch (PatchTST), transformer (encoder–decoder), channel (attention across "
                 "channels, each embedded by a mixture of linear experts), linear, sparse "
                 "(SparseTSF: a linear map across periods) or repeat (baselines)",
        "revin": "normalise each input window by its own mean and deviation (RevIN)",
        "revin_center": "what RevIN subtracts: mean (the window's mean) or last (its last "
                        "value, so that zero change repeats it: for series near a random "
                        "walk)",
        "revin_affine": "learn a per-channel scale and shift after RevIN standardises "
                        "(false: as PatchTST's and SparseTSF's reference code runs; for "
                        "sparse, whose map has no bias, the window's mean subtracted and "
                        "added back, the paper's normalisation)",
        "quantiles": "transformer, patch and channel: quantile levels to forecast beside "
                     "the point forecast, e.g. 0.1,0.5,0.9 (pinball loss; none: point only)",
        "calibrate": "with quantiles: after training, move each quantile level by what the "
                     "validation split says it needs (split-conformal; written to "
                     "calibration.json, used by test, predict and plot)",
        "members": "transformer, patch and channel: train this many copies from different "
                   "initial weights side by side and forecast their mean (a deep ensemble: "
                   "steadier across seeds; each step costs members × as much)",
        "patch_len": "patch model: time steps per patch",
        "stride": "patch model: time steps between patch starts",
        "head_dropout": "patch and channel models: dropout before the forecasting head",
        "patch_calendar": "patch model: add a linear map of the horizon's calendar features "
                          "to the forecast (with known covariates it is always on)",
        "residual_attention": "patch model: each layer's attention scores add the previous "
                              "layer's (PatchTST's res_attention, RealFormer)",
        "trend_kernel": "linear and channel models: split each window into its moving "
                        "average over this many steps and the rest, one map for each "
                        "(DLinear: 25; 0: one map)",
        "period": "sparse model: time steps of the series' cycle (24 for hourly data with a "
                  "daily one); one small map, shared by the phases of the cycle, forecasts "
                  "each phase from its own past (0: not set; sparse needs it, the other "
                  "models refuse it)",
        "experts": "channel model: linear experts whose gated mixture embeds each channel's "
                   "window (DUET's temporal clustering; 1: one linear map)",
        "expert_init": "channel model: the experts' first weights, uniform (random, "
                       "±1/√input_length) or mean (each feature the window's mean, as "
                       "DLinear's and DUET's code start)",
        "top_k": "channel model: 0 mixes every expert by a softmax gate; k ≥ 1 sends each "
                 "window to its k best experts by DUET's noisy router, with its loss that "
                 "keeps the experts evenly used",
        "mix_channels": "channel model: each channel's token attends to every channel's "
                        "(true) or only to its own (false: channel-independent)",
        "learned_mask": "channel model with mix_channels=true: each window chooses which "
                        "channels a channel's token attends to, the nearer in spectrum the "
                        "likelier, by a learned distance (DUET's channel clustering); false: "
                        "all of them",
        "half_life": "repeat model: pull the last value towards the training rows' mean, "
                     "halving its distance every this many time steps (0: never, the plain "
                     "last value; exchange rates: three to five years, Rogoff 1996)",
        "label_length": "transformer: known time steps the decoder starts from",
        "calendar": "add hour, weekday, day and year-day features (transformer; patch: "
                    "with known covariates or patch_calendar)",
        "batch_size": "windows per batch",
        "point_loss": "what training minimises for the point forecast: mse (squared error: "
                      "the mean) or mae (absolute error: the median; DUET's and TFB's loss)",
        "lr": "AdamW's learning rate (the first lr_decay_after epochs)",
        "lr_decay": "multiply lr by this after each epoch past lr_decay_after (PatchTST: "
                    "0.9; 1: constant)",
        "lr_decay_after": "epochs trained at the full lr before lr_decay applies",
        "weight_decay": "AdamW's weight decay",
        "layers.src_vocab_size": "unused by forecasting",
        "layers.tgt_vocab_size": "unused by forecasting",
        "layers.tie_output": "unused by forecasting",
        "layers.pad_id": "unused by forecasting",
        "layers.max_len": "unused: positions cover input_length + horizon",
        "layers.norm": "post, pre, or batch (patch model only)",
    }

    def problems(self) -> list[tuple[str, str]]:
        """(key, what is wrong) for values no run can use."""
        # size: one rule a line over six models' settings; per-model configs (issue 69, left
        # for its next step) will move each model's rules into its own config
        found = (one_of(self, "model", MODELS) + one_of(self, "revin_center", CENTERS)
                 + one_of(self, "point_loss", POINT_LOSSES)
                 + one_of(self, "expert_init", EXPERT_INITS))
        if not self.csv:
            found.append(("csv", "csv is not set; give csv=PATH/TO/FILE.csv"))
        L = self.layers
        found += one_of(L, "norm", ("post", "pre", "batch"))
        if L.norm == "batch" and self.model == "transformer":
            found.append(("norm", "norm=batch is for the patch model; use post or pre"))
        found += L.problems(decoder=self.model == "transformer")
        found += at_least(self, 1, "input_length", "horizon", "batch_size", "patch_len",
                          "stride", "members", "experts")
        found += in_range(self, "top_k", 0, self.experts, high_included=True)
        if self.inputs and self.model == "channel" and not self.mix_channels:
            found.append(("mix_channels", "past-observed covariates (inputs) reach the "
                                          "forecast only through channel attention; set "
                                          "mix_channels=true or inputs= (none)"))
        if not self.revin and not self.revin_affine:
            found.append(("revin_affine", "revin_affine is RevIN's learned map, and "
                                          "revin=false turns RevIN off; set "
                                          "revin_affine=true or revin=true"))
        if self.learned_mask and (self.model != "channel" or not self.mix_channels):
            found.append(("learned_mask", "learned_mask is for the channel model with "
                                          "mix_channels=true; set learned_mask=false"))
        if self.members > 1 and self.model not in NEURAL:
            found.append(("members", f"members is for the transformer, patch and channel "
                                     f"models, not {self.model}; set members=1"))
        for key in ("input_length", "horizon"):
            if getattr(self, key) > MAX_LENGTH:
                found.append((key, f"{key} must be at most {MAX_LENGTH:,} time steps, not "
                                   f"{getattr(self, key)}"))
        found += in_range(self, "head_dropout", 0, 1)
        if not 0 < self.lr < math.inf:
            found.append(("lr", f"lr must be a positive number, not {self.lr}"))
        found += at_least(self, 0, "weight_decay", "lr_decay_after")
        if not 0 < self.lr_decay <= 1:
            found.append(("lr_decay", f"lr_decay must be in (0, 1] (1 keeps lr constant), "
                                      f"not {self.lr_decay}"))
        groups = [self.column_list(), self.input_list(), self.known_list()]
        named = [c for group in groups for c in group]
        if len(named) != len(set(named)):
            found.append(("known" if self.known else "inputs",
                          "a column is named twice among columns, inputs and known"))
        if self.inputs and self.model not in ("transformer", "channel"):
            found.append(("inputs", f"past-observed covariates (inputs) are for the "
                                    f"transformer and channel models, not {self.model} (the "
                                    "others read each channel on its own); set "
                                    "model=transformer or model=channel"))
        if self.known and self.model not in ("transformer", "patch"):
            found.append(("known", f"known-future covariates are for the transformer and "
                                   f"patch models, not {self.model}"))
        found += in_range(self, "trend_kernel", 0, self.input_length, high_included=True)
        if self.trend_kernel and self.model not in ("linear", "channel"):
            found.append(("trend_kernel", f"trend_kernel is for the linear and channel models, "
                                          f"not {self.model}; set trend_kernel=0"))
        if self.model == "sparse" and not self.period:
            found.append(("period", "the sparse model needs period, the time steps of the "
                                    "series' cycle: e.g. period=24 for hourly data"))
        elif self.model == "sparse":
            found += in_range(self, "period", 1, self.input_length, high_included=True)
        elif self.period:
            found.append(("period", f"period is for the sparse model, not {self.model}; "
                                    "set period=0"))
        if not 0 <= self.half_life < math.inf:
            found.append(("half_life", f"half_life must be 0 (off) or a positive number of "
                                       f"time steps, not {self.half_life}"))
        elif self.half_life and self.model != "repeat":
            found.append(("half_life", f"half_life is for the repeat model, not {self.model}; "
                                       "set half_life=0"))
        if self.residual_attention and self.model != "patch":
            found.append(("residual_attention", f"residual_attention is for the patch model, "
                                                f"not {self.model}; set "
                                                "residual_attention=false"))
        if self.patch_calendar and (self.model != "patch" or not self.calendar):
            found.append(("patch_calendar", "patch_calendar is for the patch model with "
                                            "calendar=true; set patch_calendar=false"))
        q = self.quantiles
        if any(not 0 < level < 1 for level in q) or list(q) != sorted(set(q)):
            found.append(("quantiles", f"quantiles must be increasing levels between 0 and 1, "
                                       f"not {list(q)}"))
        if q and self.model not in NEURAL:
            found.append(("quantiles", f"quantiles are for the transformer, patch and channel "
                                       f"models, not {self.model}; set quantiles= (none)"))
        if self.model == "patch" and self.patch_len > self.input_length:
            found.append(("patch_len", f"patch_len={self.patch_len} exceeds input_length="
                                       f"{self.input_length}"))
        if self.model == "transformer" and not 0 <= self.label_length <= self.input_length:
            found.append(("label_length", f"label_length must be between 0 and "
                                          f"input_length={self.input_length}"))
        return found + self.engine.problems()

    def unread(self, keys: Iterable[str]) -> list[tuple[str, str]]:
        """(key, what is wrong) for each of ``keys`` (given by name, bare or dotted) that
        this config's model does not read (see ``READ_BY``)."""
        leaves, found = flatten(self), []
        for key in keys:
            path = resolve_key(key, leaves, "forecast config")
            readers = READ_BY.get(path, (self.model,))
            if not readers:
                why = ("its positions cover input_length + horizon"
                       if path == "layers.max_len" else "a translation setting")
                found.append((path, f"{key} is not read by forecasting ({why}); leave it out"))
            elif self.model not in readers:
                names = (", ".join(readers[:-1]) + " and " if len(readers) > 1 else "") \
                    + readers[-1]
                found.append((path, f"{key} is read by the {names} "
                                    f"model{'s' if len(readers) > 1 else ''}, not "
                                    f"{self.model}; leave it out"))
        return found

    def validate(self, origin: Origin | str) -> None:
        """Raise a UserError naming where the faulty value came from; a setting given on
        the command line that the model does not read is one too."""
        given = origin.keys() if isinstance(origin, Origin) else []
        raise_problems(self.problems() + self.unread(given), origin)

    def column_list(self) -> list[str]:
        return _names(self.columns)

    def input_list(self) -> list[str]:
        return _names(self.inputs)

    def known_list(self) -> list[str]:
        return _names(self.known)


def _names(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


# Keys a resumed run may change: how long it trains, how patiently, and whether its bands
# are calibrated once it has trained.
EXTENDABLE = (*ENGINE_EXTENDABLE, "csv", "calibrate")


def build_forecaster(cfg: ForecastConfig, channels: int) -> nn.Module:
    """The model named by ``cfg.model`` for ``channels`` series in all (forecast columns,
    then ``inputs``, then ``known``)."""
    known, inputs = len(cfg.known_list()), len(cfg.input_list())
    channels -= known  # known-future columns ride with the calendar features
    if cfg.model == "repeat":
        return RepeatLast(cfg.horizon, cfg.half_life)
    if cfg.model == "sparse":
        return SparseForecaster(input_length=cfg.input_length, horizon=cfg.horizon,
                                period=cfg.period, channels=channels, revin=cfg.revin,
                                revin_center=cfg.revin_center, revin_affine=cfg.revin_affine)
    if cfg.model == "linear":
        return LinearForecaster(input_length=cfg.input_length, horizon=cfg.horizon,
                                channels=channels, revin=cfg.revin,
                                revin_center=cfg.revin_center, trend_kernel=cfg.trend_kernel,
                                revin_affine=cfg.revin_affine)
    L = cfg.layers
    layer_args = dict(d_model=L.d_model, num_heads=L.num_heads, d_ff=L.d_ff, dropout=L.dropout,
                      attention_dropout=L.attention_dropout,
                      activation_dropout=L.activation_dropout, norm=L.norm, revin=cfg.revin,
                      revin_center=cfg.revin_center, revin_affine=cfg.revin_affine,
                      activation=L.activation)
    if cfg.members > 1:
        return Ensemble([build_forecaster(dataclasses.replace(cfg, members=1), channels + known)
                         for _ in range(cfg.members)])
    if cfg.model == "channel":
        return ChannelForecaster(channels=channels, input_length=cfg.input_length,
                                 horizon=cfg.horizon,
                                 num_layers=L.num_encoder_layers, experts=cfg.experts,
                                 expert_init=cfg.expert_init, top_k=cfg.top_k,
                                 trend_kernel=cfg.trend_kernel, head_dropout=cfg.head_dropout,
                                 quantiles=cfg.quantiles, targets=channels - inputs,
                                 mix_channels=cfg.mix_channels,
                                 learned_mask=cfg.learned_mask, **layer_args)
    if cfg.model == "patch":
        return PatchForecaster(channels=channels, input_length=cfg.input_length,
                               horizon=cfg.horizon, patch_len=cfg.patch_len, stride=cfg.stride,
                               num_layers=L.num_encoder_layers,
                               head_dropout=cfg.head_dropout, quantiles=cfg.quantiles,
                               future_features=((4 if cfg.calendar else 0) + known
                                                if known or cfg.patch_calendar else 0),
                               calendar=cfg.calendar,
                               residual_attention=cfg.residual_attention, **layer_args)
    return SeriesTransformer(channels=channels, horizon=cfg.horizon,
                             label_length=cfg.label_length, targets=channels - inputs,
                             known=known,
                             num_encoder_layers=L.num_encoder_layers,
                             num_decoder_layers=L.num_decoder_layers, calendar=cfg.calendar,
                             max_len=cfg.input_length + cfg.horizon + 1,
                             quantiles=cfg.quantiles, **layer_args)
