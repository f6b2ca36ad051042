"""Every setting of `transduce forecast train`: the run's own (data, split, lengths,
optimiser, engine) and, under ``model``, those of the model it chose (a tagged union: see
:mod:`transduce.tasks.forecasting.models`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from torch import nn

from transduce.checks import Origin, at_least, one_of, raise_problems
from transduce.config import apply_mapping
from transduce.tasks.forecasting.layouts import LAYOUTS, LayoutConfig, WideLayout
from transduce.tasks.forecasting.models import MODELS, ModelConfig
from transduce.tasks.forecasting.models.patch import PatchConfig
from transduce.training.engine_config import EXTENDABLE as ENGINE_EXTENDABLE
from transduce.training.engine_config import EngineConfig

POINT_LOSSES = ("mse", "mae")
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
    ``model``: the model and its own settings, ``model: {name: patch, patch_len: 16}`` or,
    as older files do, ``model: patch`` beside its settings; keys may be given bare
    (``patch_len=8``, ``d_model=16``), and a setting of another model is an error. A
    neural model's ``layers`` are the library's TransformerConfig (``norm`` may also be
    "batch" for the patch model). ``engine``:
    the training engine's settings (its keys may be given bare: ``max_epochs=10``); by
    default it validates and writes a checkpoint at the end of every epoch and keeps the one
    of lowest validation MSE.
    """

    csv: str = ""
    date_column: str = "date"
    known: str = ""
    split: str = "auto"
    layout: LayoutConfig = field(default_factory=WideLayout, metadata={"union": LAYOUTS})
    input_length: int = 336
    horizon: int = 96
    model: ModelConfig = field(default_factory=PatchConfig, metadata={"union": MODELS})
    calibrate: bool = True
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
        "known": "transformer, patch and logsparse: comma-separated known-future covariates "
        "(e.g. a planned price), read over the input and the horizon; predict needs "
        "their future rows (in a long table: its covariate columns)",
        "layout": "wide (one CSV of aligned columns: one model for them) or long (a table of "
        "unique_id, ds, y holding many series of any lengths: one global model "
        "trained on windows of them all, validated on each series' last horizon)",
        "split": "train/validation/test borders: auto (ETT's for ETTh*/ETTm* files, else "
        "70/10/20), ett_hour, ett_minute, ratio, or rows:A,B,C (train rows [0, A), "
        "validation [A, B), test [B, C): e.g. a backtest before the test split)",
        "input_length": "time steps the model reads",
        "horizon": "time steps it forecasts",
        "model": "patch (PatchTST), transformer (encoder–decoder), channel (attention across "
        "channels, each embedded by a mixture of linear experts), linear, sparse "
        "(SparseTSF: a linear map across periods) or repeat (baselines)",
        "calibrate": "with quantiles: after training, move each quantile level by what the "
        "validation split says it needs (split-conformal; written to "
        "calibration.json, used by test, predict and plot)",
        "batch_size": "windows per batch",
        "point_loss": "what training minimises for the point forecast: mse (squared error: "
        "the mean) or mae (absolute error: the median; DUET's and TFB's loss)",
        "lr": "AdamW's learning rate (the first lr_decay_after epochs)",
        "lr_decay": "multiply lr by this after each epoch past lr_decay_after (PatchTST: "
        "0.9; 1: constant)",
        "lr_decay_after": "epochs trained at the full lr before lr_decay applies",
        "weight_decay": "AdamW's weight decay",
    }

    @classmethod
    def of(cls, **settings) -> ForecastConfig:
        """A config from settings given by name, bare or dotted, as on the command line
        (``ForecastConfig.of(model="linear", trend_kernel=25)``); a setting of another model
        is an error."""
        return apply_mapping(cls(), settings, "settings", strict=True)

    @property
    def quantiles(self) -> tuple[float, ...]:
        """The quantile levels the model forecasts beside the point (none for a baseline)."""
        return getattr(self.model, "quantiles", ())

    def problems(self) -> list[tuple[str, str]]:
        """(key, what is wrong) for values no run can use."""
        found = one_of(self, "point_loss", POINT_LOSSES) + self.layout.problems(self)
        if not self.csv:
            found.append(("csv", "csv is not set; give csv=PATH/TO/FILE.csv"))
        found += at_least(self, 1, "input_length", "horizon", "batch_size")
        for key in ("input_length", "horizon"):
            if getattr(self, key) > MAX_LENGTH:
                found.append(
                    (
                        key,
                        f"{key} must be at most {MAX_LENGTH:,} time steps, not "
                        f"{getattr(self, key)}",
                    )
                )
        if not 0 < self.lr < math.inf:
            found.append(("lr", f"lr must be a positive number, not {self.lr}"))
        found += at_least(self, 0, "weight_decay", "lr_decay_after")
        if not 0 < self.lr_decay <= 1:
            found.append(
                (
                    "lr_decay",
                    f"lr_decay must be in (0, 1] (1 keeps lr constant), not {self.lr_decay}",
                )
            )
        found += self._covariate_problems()
        return found + self.model.problems(self) + self.engine.problems()

    def _covariate_problems(self) -> list[tuple[str, str]]:
        found, name = [], self.model.name
        named = self.column_list() + self.input_list() + self.known_list()
        if len(named) != len(set(named)):
            found.append(
                (
                    "known" if self.known else "inputs",
                    "a column is named twice among columns, inputs and known",
                )
            )
        if self.input_list() and not self.model.mixes_channels():
            found.append(_unmixed(self.model))
        if self.known and not self.model.READS_KNOWN:
            found.append(
                (
                    "known",
                    f"known-future covariates are for the transformer, patch "
                    f"and logsparse models, not {name}",
                )
            )
        return found

    def validate(self, origin: Origin | str) -> None:
        """Raise a UserError naming where the faulty value came from."""
        raise_problems(self.problems(), origin)

    def column_list(self) -> list[str]:
        """The CSV's columns to forecast (a wide layout's ``columns``; none for a long one)."""
        return _names(getattr(self.layout, "columns", ""))

    def input_list(self) -> list[str]:
        """The CSV's past-observed covariates (a wide layout's ``inputs``)."""
        return _names(getattr(self.layout, "inputs", ""))

    def known_list(self) -> list[str]:
        return _names(self.known)


def _unmixed(model: ModelConfig) -> tuple[str, str]:
    """The problem of past-observed covariates given to a model that reads each channel on
    its own: they reach a forecast only through the other channels."""
    if model.MIXES_CHANNELS:  # a setting of it keeps the channels apart (mix_channels)
        return (
            "mix_channels",
            "past-observed covariates (inputs) reach the forecast only through the other "
            "channels; set mix_channels=true or inputs= (none)",
        )
    mixing = [name for name, config in MODELS.items() if config.MIXES_CHANNELS]
    return (
        "inputs",
        f"past-observed covariates (inputs) are for the models that mix channels "
        f"({', '.join(mixing)}), not {model.name}, which reads each channel on its own; "
        f"set model={' or model='.join(mixing)}",
    )


def _names(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


# Keys a resumed run may change: how long it trains, how patiently, and whether its bands
# are calibrated once it has trained.
EXTENDABLE = (*ENGINE_EXTENDABLE, "csv", "calibrate")


def build_forecaster(cfg: ForecastConfig, channels: int) -> nn.Module:
    """The model ``cfg.model`` describes for ``channels`` series in all (forecast columns,
    then ``inputs``, then ``known``)."""
    known, inputs = len(cfg.known_list()), len(cfg.input_list())
    # known-future columns ride with the calendar features
    return cfg.model.build(cfg, channels - known, inputs, known)
