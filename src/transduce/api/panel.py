"""A global forecasting run (``layout=long``) from Python and for the server: one model,
many series, picked by id. ``Forecaster(RUN)`` and ``transduce.load(RUN)`` give one for a
global run; it has the methods of a :class:`~transduce.api.forecaster.Forecaster`, with a
series selector."""

from __future__ import annotations

from pathlib import Path

from transduce import runs
from transduce.api.forecaster import Forecaster
from transduce.data.panel import read_panel, step_texts
from transduce.errors import UserError
from transduce.io import check_output_file
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.panel import forecast_panel, test_panel
from transduce.viz.forecast import plot_forecast


class GlobalForecaster(Forecaster):
    """A global run (``layout=long``): one model for every series of a long table. ``ids``
    are the series of the table it trained on; :meth:`predict`, :meth:`plot` and
    :meth:`test` take a series selector or a table where a run of one CSV takes its CSV;
    :meth:`forecast_one` gives one series' history and next ``horizon`` steps (the page's).

    Args:
        path: the run directory.
        history: the long table the forecasts follow (default: the one it trained on).
        known: for a run that reads known covariates, a long table of their values at each
            series' next horizon steps (without it, such a run cannot forecast).
    """

    def __init__(
        self,
        path: str | Path,
        history: str | Path | None = None,
        known: str | Path | None = None,
    ) -> None:
        self.run_dir = Path(path)
        self.cfg = runs.read_config(path, ForecastConfig)
        names = tuple(self.cfg.known_list())
        self.history = read_panel(history or self.cfg.csv, known=names)
        self.known = None
        if known:
            self.read_known(known)
        self.ids = list(self.history.ids)

    def __repr__(self) -> str:
        return f"GlobalForecaster({str(self.run_dir)!r}: {self.describe()})"

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

    def predict(self, data=None, series: str | list[str] | None = None, known=None) -> list[dict]:
        """Every series' next ``horizon`` steps after ``data`` (a long table's path; by
        default the table it trained on), or only those of ``series`` (an id or a list of
        them): rows of ``unique_id``, ``ds``, ``y`` and a ``y_q…`` per quantile. ``known``:
        the known covariates' next values (a long table), for a run that reads them."""
        found = self._found(data, series, known)
        rows = []
        for sid, steps in found["steps"].items():
            for text, row in zip(step_texts(steps), found["forecast"][sid]):
                rows.append({"unique_id": sid, "ds": text, **self._values(row, found)})
        return rows

    def plot(
        self, data=None, path: str | Path | None = None, series: str | None = None, known=None
    ) -> Path:
        """A PNG of ``series``'s history (the last 4 × horizon steps of ``data``, by default
        the table it trained on) and its forecast; ``path`` by default RUN/forecast_ID.png."""
        if not series:
            raise UserError("a global run holds many series: name one with --series ID (series=)")
        path = Path(path or runs.series_plot(self.run_dir, series))
        check_output_file(path, "--output")  # before the forecast, not after
        history = read_panel(data, known=tuple(self.cfg.known_list())) if data else self.history
        found = self._found(history, series, known)
        values = history.values[history.index(series)]
        forecast = found["forecast"][series]  # (H, 1 + Q)
        H, levels = len(forecast), found["quantiles"]
        shown = min(len(values), 4 * H)
        steps = history.steps[history.index(series)][-shown:] + found["steps"][series]
        plot_forecast(
            values[-shown:, None],
            None,
            forecast[:, None, 0],
            [series],
            path,
            f"{series}: the {H} steps after its last row",
            forecast[:, None, 1:] if levels else None,
            tuple(levels),
            steps if history.dated else None,
        )
        return path

    def test(self, data=None) -> dict:
        """The M4 scores (sMAPE, MASE, OWA against Naive2, the ρ-risks) of its forecasts
        after the table it trained on against ``data``, a long table of each series' next
        horizon; written to RUN/test_results.json."""
        if data is None:
            raise UserError(
                "a global run is scored against a long table of each series' next "
                "horizon: give --csv TEST.csv (unique_id, ds, y)"
            )
        return test_panel(self.run_dir, data)

    def attention(self, data=None) -> dict:
        raise UserError(
            f"{self.run_dir}: a global run's attention is not drawn yet; the attention of a "
            "run of one CSV is (Forecaster.attention, transduce explain)"
        )

    def _found(self, data, series: str | None, known) -> dict:
        history = self.history if data is None else data
        future = self.known if known is None else known
        if known is not None and not self.cfg.known_list():
            self.read_known(known)  # refuses it, naming the run
        ids = [series] if isinstance(series, str) else series
        return forecast_panel(self.run_dir, history, ids or None, future)

    @staticmethod
    def _values(row, found: dict) -> dict:
        levels = found["quantiles"]
        return {
            "y": float(f"{row[0]:.6g}"),
            **{f"y_q{level:g}": float(f"{row[1 + k]:.6g}") for k, level in enumerate(levels)},
        }

    def forecast_one(self, series_id: str, shown: int | None = None) -> dict:
        """``{"history": [{ds, y}], "forecast": [{ds, y, y_q…}], "date_column": "ds"}`` of
        one series: its last ``shown`` observed steps (default 4 × horizon) and its next
        horizon."""
        found = forecast_panel(self.run_dir, self.history, [series_id], self.known)
        s = self.history.index(series_id)
        shown = shown or 4 * self.cfg.horizon
        steps, values = self.history.steps[s][-shown:], self.history.values[s][-shown:]
        later = found["steps"][series_id]
        texts = step_texts(steps + later)  # one resolution for history and forecast
        ahead = [
            {"ds": text, **self._values(row, found)}
            for text, row in zip(texts[len(steps) :], found["forecast"][series_id])
        ]
        return {
            "date_column": "ds",
            "series": series_id,
            "forecast": ahead,
            "history": [{"ds": text, "y": float(v)} for text, v in zip(texts, values)],
        }


Forecaster.LAYOUTS["long"] = GlobalForecaster
