"""A global forecasting run (``layout=long``) from Python and for the server: one model,
many series, picked by id. ``Forecaster(RUN)`` and ``transduce.load(RUN)`` give one for a
global run; it has the methods of a :class:`~transduce.api.forecaster.Forecaster`, with a
series selector."""

from __future__ import annotations

from pathlib import Path

from transduce import runs
from transduce.api.forecast_attention import attention_of
from transduce.api.forecast_info import global_info
from transduce.api.forecast_views import m4_lines
from transduce.api.forecaster import Forecaster, _run_dir
from transduce.data.panel import Panel, read_panel, step_texts
from transduce.errors import UserError
from transduce.io import check_output_file
from transduce.tasks.forecasting.panel import (
    ends_of,
    forecast_panel,
    future_of,
    held_out,
    test_panel,
)
from transduce.tasks.forecasting.rundir import load_model
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
        self.run_dir = _run_dir(path)
        self.cfg, self.model, self.scaler, self.columns = load_model(self.run_dir)
        self.date_column = "ds"
        self.inputs = 1 + len(self.cfg.input_list())  # y, then the past-observed covariates
        self.targets = ["y"]
        self.history = self._table(history)
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
        history = self._table(data) if data else self.history
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

    def test(self, data=None, drop_last: tuple[int, ...] = ()) -> dict:
        """The M4 scores (sMAPE, MASE, OWA against Naive2, the ρ-risks) of its forecasts
        after the table it trained on against ``data``, a long table of each series' next
        horizon (by default, for a run trained with ``holdout``, the steps it left out);
        written to RUN/test_results.json."""
        if drop_last:
            raise UserError(
                "--drop-last is for a run of one CSV's test windows; a global run is scored "
                "on each series' next horizon"
            )
        return test_panel(self, data)

    def report(self, result: dict) -> list[str]:
        """:meth:`test`'s scores as the lines ``forecast test`` prints."""
        return m4_lines(result)

    def figures(
        self, data=None, output=None, window=None, future=False, series=None, known=None
    ) -> list[Path]:
        """``forecast plot`` of a global run: ``series``'s history and forecast (see
        :meth:`plot`)."""
        for option, given in (("--window", window is not None), ("--future", future)):
            if given:
                raise UserError(
                    f"{option} is for a run of one CSV; a global run (layout=long) "
                    "forecasts each series after its last row: name one with --series ID"
                )
        return [self.plot(data, output, series=series, known=known)]

    def info(self) -> dict:
        """What the server's /info says of the run (see :mod:`transduce.api.describe`)."""
        return global_info(self)

    def attention(self, data=None, series: str | None = None) -> dict:
        """What the model attends to when it forecasts ``series``'s next horizon after
        ``data`` (a long table; by default the one it trained on), laid out as
        :meth:`Forecaster.attention` lays out a run of one CSV's, on the series' steps."""
        if not series:
            raise UserError("a global run holds many series: name one with series=ID")
        history = self._table(data) if data is not None else self.history
        ahead = ends_of(self, history, [history.index(series)], future_of(self, self.known))
        return attention_of(self, ahead, f"series {series}")

    def _table(self, data) -> Panel:
        """The long table ``data`` (a path; by default the one the run trained on, less the
        steps it held out), with the run's covariates."""
        names = tuple(self.cfg.input_list() + self.cfg.known_list())
        if data is None:
            return held_out(read_panel(self.cfg.csv, known=names), self.cfg.layout.holdout)
        return data if isinstance(data, Panel) else read_panel(data, known=names)

    def _found(self, data, series: str | None, known) -> dict:
        history = self.history if data is None else data
        future = self.known if known is None else known
        if known is not None and not self.cfg.known_list():
            self.read_known(known)  # refuses it, naming the run
        ids = [series] if isinstance(series, str) else series
        return forecast_panel(self, history, ids or None, future)

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
        found = forecast_panel(self, self.history, [series_id], self.known)
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
