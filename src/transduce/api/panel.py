"""A global forecasting run (``layout=long``) from Python and for the server: one model,
many series, picked by id."""

from __future__ import annotations

from pathlib import Path

from transduce import runs
from transduce.data.panel import read_panel, step_texts
from transduce.errors import UserError
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.panel import forecast_panel


class GlobalForecaster:
    """A global run (``layout=long``): one model for every series of a long table
    (``transduce.load(RUN)`` gives one). ``ids`` are the series of the table it trained on;
    :meth:`forecast` gives one series' history and next ``horizon`` steps.

    Args:
        run_dir: the run directory.
        history: the long table the forecasts follow (default: the one it trained on).
        known: for a run that reads known covariates, a long table of their values at each
            series' next horizon steps (without it, such a run cannot forecast).
    """

    def __init__(
        self,
        run_dir: str | Path,
        history: str | Path | None = None,
        known: str | Path | None = None,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.cfg = runs.read_config(run_dir, ForecastConfig)
        names = tuple(self.cfg.known_list())
        self.history = read_panel(history or self.cfg.csv, known=names)
        self.known = None
        if known:
            self.read_known(known)
        self.ids = list(self.history.ids)

    def read_known(self, path: str | Path) -> None:
        """Forecast with the known covariates' next values in the long table ``path``."""
        if not self.cfg.known_list():
            raise UserError(
                f"{path}: {self.run_dir} reads no known covariates (it was trained without "
                "known=...); leave --known out"
            )
        self.known = read_panel(path, known=tuple(self.cfg.known_list()), target=False)

    def describe(self) -> str:
        return (
            f"global {self.cfg.model.name} forecaster of {len(self.ids)} series, horizon "
            f"{self.cfg.horizon}, input {self.cfg.input_length}"
        )

    def forecast(self, series_id: str, shown: int | None = None) -> dict:
        """``{"history": [{ds, y}], "forecast": [{ds, y, y_q…}], "date_column": "ds"}`` of
        one series: its last ``shown`` observed steps (default 4 × horizon) and its next
        horizon."""
        found = forecast_panel(self.run_dir, self.history, [series_id], self.known)
        s = self.history.index(series_id)
        shown = shown or 4 * self.cfg.horizon
        steps, values = self.history.steps[s][-shown:], self.history.values[s][-shown:]
        later = found["steps"][series_id]
        texts = step_texts(steps + later)  # one resolution for history and forecast
        levels = found["quantiles"]
        ahead = [
            {
                "ds": text,
                "y": float(f"{row[0]:.6g}"),
                **{f"y_q{level:g}": float(f"{row[1 + k]:.6g}") for k, level in enumerate(levels)},
            }
            for text, row in zip(texts[len(steps) :], found["forecast"][series_id])
        ]
        return {
            "date_column": "ds",
            "series": series_id,
            "forecast": ahead,
            "history": [{"ds": text, "y": float(v)} for text, v in zip(texts, values)],
        }
