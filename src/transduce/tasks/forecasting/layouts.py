"""How a forecasting run's data is laid out, a tagged union chosen by ``layout:`` as
``model:`` chooses a model: ``wide`` (one CSV of aligned columns: which to forecast,
``columns``, and which only to read, ``inputs``) or ``long`` (a table of ``unique_id, ds,
y`` holding many series: ``season``, ``scaling``). A layout's own settings exist only under
it, so ``scaling=log`` on a wide run, or ``columns=`` on a long one, is refused by
construction, as another model's setting is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from transduce.checks import at_least, one_of

SCALINGS = ("mean", "log")
Problem = tuple[str, str]


@dataclass(frozen=True, kw_only=True)
class LayoutConfig:
    """A layout's own settings. Subclasses set ``NAME`` (the tag ``layout:`` names) and a
    ``HELP`` line for each setting."""

    NAME: ClassVar[str] = ""
    HELP: ClassVar[dict[str, str]] = {}
    # What differs between layouts is how the data is read (READER: "module:function" of a
    # config to its ForecastData) and the validation measure that chooses the checkpoint.
    READER: ClassVar[str] = ""
    METRIC: ClassVar[str] = "val_mse"
    BACKTEST: ClassVar[str] = ""  # "module:class" that cuts the data into folds
    name: str = field(default="", init=False)  # the tag, written with the settings
    inputs: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.NAME)

    def problems(self, run: Any) -> list[Problem]:
        """(key, what is wrong) for values no run of this layout can use."""
        return []

    def scale_note(self) -> str:
        """What the validation measure's scale is, where it is not the data's z-scores."""
        return ""


@dataclass(frozen=True, kw_only=True)
class WideLayout(LayoutConfig):
    """One CSV of aligned columns, each a channel of one series set; each column is scaled
    by its training rows' mean and deviation (the long-horizon protocol)."""

    NAME: ClassVar[str] = "wide"
    READER: ClassVar[str] = "transduce.tasks.forecasting.data:read_wide"
    BACKTEST: ClassVar[str] = "transduce.tasks.forecasting.folds:RowFolds"
    columns: str = ""
    HELP: ClassVar[dict[str, str]] = {
        "columns": "comma-separated columns to forecast, each also an input (empty: every "
        "numeric column not in inputs or known)",
        "inputs": "transformer and channel: comma-separated past-observed covariates, read "
        "but not forecast",
    }


@dataclass(frozen=True, kw_only=True)
class LongLayout(LayoutConfig):
    """A table of many series of any lengths and starts, one global model for them all."""

    NAME: ClassVar[str] = "long"
    READER: ClassVar[str] = "transduce.tasks.forecasting.panel:read_long"
    BACKTEST: ClassVar[str] = "transduce.tasks.forecasting.folds:HoldoutFolds"
    # the windows are on scales of their own, so MSE would let the series of noisy windows
    # choose; MAE weighs them alike
    METRIC: ClassVar[str] = "val_mae"
    season: int = 0
    scaling: str = "mean"
    holdout: int = 0
    HELP: ClassVar[dict[str, str]] = {
        "inputs": "channel with mix_channels: comma-separated past-observed covariate "
        "columns of the table, read but not forecast",
        "holdout": "steps left out at the end of every series (a backtest fold's test "
        "steps and those after them); forecast test scores the first horizon of them",
        "season": "steps of the series' seasonal cycle (24 for hourly): with integer steps "
        "(no dates) the models read the phase in that cycle as a feature (0: none)",
        "scaling": "how each window is put on a common scale. mean: divided by the mean |y| "
        "of its input steps (DeepAR); log: log y less the mean log y of its input steps, "
        "the forecast exp'd back, so errors count relative to the level as sMAPE and MASE "
        "on positive series do (quantiles carry over, exp being monotone)",
    }

    def scale_note(self) -> str:
        if self.scaling == "log":
            return " (each window log y less its input's mean log y)"
        return " (each window scaled by its input's mean absolute value)"

    def problems(self, run: Any) -> list[Problem]:
        found = one_of(self, "scaling", SCALINGS) + at_least(self, 0, "season", "holdout")
        if 0 < self.holdout < run.horizon:
            found.append(
                (
                    "holdout",
                    f"holdout={self.holdout} leaves out fewer steps than the horizon "
                    f"({run.horizon}) a test scores; give 0 or at least {run.horizon}",
                )
            )
        return found


LAYOUTS: dict[str, type[LayoutConfig]] = {"wide": WideLayout, "long": LongLayout}
