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
    name: str = field(default="", init=False)  # the tag, written with the settings

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.NAME)

    def problems(self, run: Any) -> list[Problem]:
        """(key, what is wrong) for values no run of this layout can use."""
        return []


@dataclass(frozen=True, kw_only=True)
class WideLayout(LayoutConfig):
    """One CSV of aligned columns, each a channel of one series set; each column is scaled
    by its training rows' mean and deviation (the long-horizon protocol)."""

    NAME: ClassVar[str] = "wide"
    columns: str = ""
    inputs: str = ""
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
    season: int = 0
    scaling: str = "mean"
    HELP: ClassVar[dict[str, str]] = {
        "season": "steps of the series' seasonal cycle (24 for hourly): with integer steps "
        "(no dates) the models read the phase in that cycle as a feature (0: none)",
        "scaling": "how each window is put on a common scale. mean: divided by the mean |y| "
        "of its input steps (DeepAR); log: log y less the mean log y of its input steps, "
        "the forecast exp'd back, so errors count relative to the level as sMAPE and MASE "
        "on positive series do (quantiles carry over, exp being monotone)",
    }

    def problems(self, run: Any) -> list[Problem]:
        return one_of(self, "scaling", SCALINGS) + at_least(self, 0, "season")


LAYOUTS: dict[str, type[LayoutConfig]] = {"wide": WideLayout, "long": LongLayout}
