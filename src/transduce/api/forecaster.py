"""`transduce forecast predict`: forecast the rows after a CSV's last one, in its units."""

from __future__ import annotations

# size: the Forecaster's public methods (fit, predict, plot, test, forecast, attention, read)
# and the helpers that turn a DataFrame or CSV into the rows it reads
import csv
import io
import os
from pathlib import Path

import numpy as np
import torch

from transduce import families, runs
from transduce.api.forecast_attention import attention_of
from transduce.api.forecast_frames import (
    _frame_kept_only_if_used,
    _frame_text,
    _in_frame,
    _name,
    settings_for,
)
from transduce.api.forecast_info import wide_info
from transduce.api.forecast_views import plot_window, split_lines
from transduce.data.calendar import format_dates, infer_frequency, next_dates
from transduce.data.text import decode_utf8
from transduce.data.timeseries import parse_series
from transduce.data.windows import Windows, calendar_features
from transduce.errors import UserError
from transduce.evaluation.quantiles import column_name
from transduce.io import check_output_file
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.evaluation import Ahead, forecast_ends
from transduce.tasks.forecasting.rundir import check_finite, evaluate_run, load_model
from transduce.tasks.forecasting.task import train_forecaster
from transduce.viz.forecast import plot_forecast


class Forecaster:
    """A trained forecasting run, ready to forecast (``transduce.load(RUN)`` gives one).

    ::

        model = Forecaster.fit("ETTh1.csv", "runs/etth1", horizon=24, max_epochs=5)
        rows = model.predict("ETTh1.csv")     # the 24 rows after the file's last
        model.plot("ETTh1.csv", "next_24.png")
        model.test()["mse"]                   # its test-split MSE, as `forecast test`

    Args:
        path: the run directory (its best checkpoint is used), or a folder that
            ``forecast blend`` wrote.
    """

    # The class that reads each layout's data, by the name its config.yaml gives, as a
    # "module:name" imported when first needed: GlobalForecaster subclasses this one, which
    # cannot import it without a cycle. Every method is called alike on both.
    LAYOUTS: dict[str, str] = {"long": "transduce.api.panel:GlobalForecaster"}

    def __new__(cls, path: str | Path, *args, **kwargs):
        """A Forecaster of the class the run's layout needs: ``Forecaster(RUN)`` opens any
        forecasting run, one series set or many series."""
        if cls is Forecaster:
            layout = Forecaster.LAYOUTS.get(_layout_of(_run_dir(path)))
            cls = families.resolve(layout) if layout else Forecaster
        return super().__new__(cls)

    def __init__(self, path: str | Path) -> None:
        run_dir = _run_dir(path)
        self.run_dir = run_dir
        self.cfg, self.model, self.scaler, self.columns = load_model(run_dir)
        self.date_column = self.cfg.date_column
        self.known = len(self.cfg.known_list())
        self.inputs = len(self.columns) - self.known  # forecast columns, then past covariates
        self.targets = list(self.columns[: self.inputs - len(self.cfg.input_list())])

    def __repr__(self) -> str:
        return f"Forecaster({str(self.run_dir)!r}: {self.describe()})"

    def describe(self) -> str:
        """What it forecasts from what, e.g. ``patch; forecasts sales; 12 steps from the last
        104; known ahead promo; quantiles 0.1, 0.5, 0.9``."""
        cfg = self.cfg
        parts = [
            getattr(self.model, "label", cfg.model.name),
            f"forecasts {', '.join(self.targets)}",
            f"{cfg.horizon} steps from the last {cfg.input_length}",
        ]
        for name, columns in (("inputs", cfg.input_list()), ("known ahead", cfg.known_list())):
            if columns:
                parts.append(f"{name} {', '.join(columns)}")
        if cfg.quantiles:
            parts.append("quantiles " + ", ".join(f"{q:g}" for q in cfg.quantiles))
        return "; ".join(parts)

    @classmethod
    def fit(
        cls, data, run_dir: str | Path, config: str | Path | None = None, **settings
    ) -> Forecaster:
        """Train a run on ``data`` (a CSV path, or a DataFrame, saved as RUN/series.csv) and
        load it. ``config``: a YAML file of settings (e.g. configs/forecast_etth1_patch.yaml);
        ``settings``: any key of ``forecast train`` (``horizon=24``, ``quantiles=[0.1, 0.9]``).
        Calling it again on the same ``run_dir`` resumes that run."""
        with _frame_kept_only_if_used(data, run_dir):
            train_forecaster(settings_for(data, run_dir, config, settings), run_dir)
        return cls(run_dir)

    def predict(self, data=None, series: str | None = None, known=None) -> list[dict]:
        """The rows after the last of ``data`` (a CSV path or a DataFrame; by default the
        CSV the run was trained on), as :meth:`forecast` gives them. ``series`` and ``known``
        are for a global run (:class:`~transduce.api.panel.GlobalForecaster`)."""
        _one_series_set(series=series, known=known)
        series, name = self._history(data)
        return self.forecast_series(series, name)

    def plot(
        self, data=None, path: str | Path | None = None, series: str | None = None, known=None
    ) -> Path:
        """A PNG of the forecast after ``data``'s last row (by default the run's own CSV),
        after its history; ``path`` by default RUN/forecast_future.png. ``series`` and
        ``known`` are for a global run."""
        _one_series_set(series=series, known=known)
        path = runs.forecast_plot(self.run_dir, "future") if path is None else path
        series, name = self._history(data)
        dates, values = self.predict_arrays(series, name)
        n = _observed(series)
        shown = min(n, max(self.cfg.input_length, 2 * self.cfg.horizon))
        history = series.values[n - shown : n, : len(self.targets)]
        plot_forecast(
            history,
            None,
            values[..., 0],
            self.targets,
            path,
            f"{getattr(self.model, 'label', self.cfg.model.name)} · the "
            f"{self.cfg.horizon} {_unit(dates)} after the last row",
            values[..., 1:] if self.cfg.quantiles else None,
            self.cfg.quantiles,
            list(series.dates[n - shown : n]) + list(dates),
        )
        return Path(path)

    def test(self, data=None, drop_last: tuple[int, ...] = ()) -> dict:
        """The test split's scores, as ``forecast test`` prints them (and writes them to
        RUN/test_results.json): ``mse``, ``mae`` and ``windows`` on the normalised scale and,
        for a probabilistic run, ``rho_risk`` and ``coverage`` (and with ``drop_last``, see
        :func:`~transduce.tasks.forecasting.evaluation.evaluate`). It reads the CSV the run
        was trained on; ``data`` (a table of each series' next steps) is for a global run."""
        if data is not None:
            raise UserError(
                f"{self.run_dir}: a run of one CSV is scored on its own test split; a test "
                "table is for a global run (layout=long)"
            )
        return evaluate_run(self.run_dir, tuple(drop_last))

    def report(self, result: dict) -> list[str]:
        """:meth:`test`'s scores as the lines ``forecast test`` prints."""
        return split_lines(result)

    def figures(
        self, data=None, output=None, window=None, future=False, series=None, known=None
    ) -> list[Path]:
        """``forecast plot``: test window ``window`` (default 0) with its attention where
        the model has one, or with ``future`` the forecast after ``data``'s last row (by
        default the run's own CSV); returns the PNGs written."""
        _one_series_set(series=series, known=known)
        if data and not future:
            raise UserError(
                "--csv goes with --future: give both to plot the forecast after a "
                "file's last row (a test window is plotted from the run's own CSV)"
            )
        if not future:
            return plot_window(self.run_dir, window or 0, output)
        output = output or runs.forecast_plot(self.run_dir, "future")
        check_output_file(output, "--output")
        return [self.plot(data, output)]

    def read_known(self, path) -> None:
        raise UserError(
            f"{path}: --known is for a global forecasting run (layout=long); "
            f"{self.run_dir} reads one CSV, whose last rows give the known covariates"
        )

    def info(self) -> dict:
        """What the server's /info says of the run (see :mod:`transduce.api.describe`)."""
        return wide_info(self)

    def _history(self, data):
        """(the series, what errors call it) of ``data`` for :meth:`predict` and
        :meth:`plot`: a CSV path or a DataFrame, by default the CSV the run was trained on."""
        data = self.cfg.csv if data is None else data
        name = _name(data)
        if hasattr(data, "to_csv"):
            try:
                return self.read(_frame_text(data, self.cfg.date_column), name), name
            except UserError as error:
                raise _in_frame(error, name) from None
        if not isinstance(data, (str, os.PathLike)) or not str(data):
            raise TypeError(f"give a CSV file's path or a DataFrame, not {data!r}"[:200])
        try:
            text = Path(data).read_bytes()
        except OSError as error:
            raise UserError(f"{data}: cannot read ({error.strerror})") from None
        return self.read(decode_utf8(text, str(data)), name), name

    def forecast(self, csv_text: str, name: str = "<rows>") -> list[dict]:
        """The ``horizon`` rows after the last of ``csv_text`` (a header with the date
        column and the run's columns, then at least ``input_length`` rows), in the
        original units: ``[{"date": ..., COLUMN: value, ..., COLUMN_q0.1: value, ...}, ...]``
        (a column per quantile level of a probabilistic run)."""
        if not isinstance(csv_text, str):
            raise TypeError(
                f"forecast() takes the rows as CSV text (a str), not "
                f"{type(csv_text).__name__}; predict() takes a path or a DataFrame"
            )
        if "\n" not in csv_text.strip() and Path(csv_text.strip()).suffix.lower() == ".csv":
            raise UserError(
                f"{name}: {csv_text.strip()!r} is a file name, not CSV rows; "
                "forecast() takes the rows as text, predict() takes a path"
            )
        return self.forecast_series(self.read(csv_text, name), name)

    def read(self, csv_text: str, name: str = "<rows>"):
        """The run's columns of CSV text, as a :class:`~transduce.data.timeseries.Series`."""
        return parse_series(csv_text, name, self.cfg.date_column, self.columns, self._blank_tail())

    def _blank_tail(self) -> tuple[str, ...]:
        """With known-future covariates, the file's last rows give their future values and
        leave the other columns blank."""
        return tuple(self.columns[: self.inputs]) if self.known else ()

    @torch.no_grad()
    def predict_arrays(self, series, name: str = "<rows>") -> tuple[list, np.ndarray]:
        """The ``horizon`` dates after ``series`` (by its calendar, or the rows that give the
        known covariates' future) and the forecast there, (H, C, 1 + Q) in the original units
        of the forecast columns: the point forecast, then each quantile."""
        ahead = self._window(series, name)
        target = self.scaler.head(len(self.targets))
        found = forecast_ends(self.model, ahead.ends, ahead.features, target)[0]
        return ahead.steps[0], check_finite(found, ahead.read, name)

    @torch.no_grad()
    def attention(self, data=None) -> dict:
        """What the model attends to when it forecasts the ``horizon`` rows after ``data``
        (a CSV path or DataFrame; by default the run's own CSV), with dates: for the
        ``transformer``, each decoder position (its known rows, then the forecast steps) over
        the input steps (``rows``, ``columns``: dates); for ``patch``, each patch over the
        others, per channel (``columns``: each patch's first and last date); for ``channel``
        with ``mix_channels``, the channels over each other. ``weights``: indexed
        ``[head][row][column]``, of the last layer (per channel for ``patch``). Other models
        have no attention: a UserError says so."""
        series, name = self._history(data)
        return self.attention_of(series, name)

    def attention_of(self, series, name: str = "<rows>") -> dict:
        """:meth:`attention` of rows already read by :meth:`read`."""
        return attention_of(self, self._window(series, name), name)

    def _window(self, series, name: str) -> Ahead:
        """The window the forecast after ``series``'s last observed row reads, and what it
        is for (see :class:`~transduce.tasks.forecasting.evaluation.Ahead`)."""
        cfg, H = self.cfg, self.cfg.horizon
        scaled = self.scaler.transform(series.values)  # (N, all columns)
        n = _observed(series)
        future = len(series.dates) - n  # blank rows: the known covariates' future
        if self.known and future < H:
            raise UserError(
                f"{name}: {future} rows after the last observed one give the known "
                f"covariates ({', '.join(self.cfg.known_list())}); the forecast "
                f"needs {H}, with the other columns left blank"
            )
        if n < cfg.input_length:
            raise UserError(
                f"{name}: {n} row{'' if n == 1 else 's'} of values; the model "
                f"reads the last {cfg.input_length}, so it needs at least that many"
            )
        history = slice(n - cfg.input_length, n)
        if self.known:
            dates = series.dates[n : n + H]
        else:
            dates = next_dates(series.dates, H, infer_frequency(series.dates, name, series.lines))
        known = scaled[:, self.inputs :]  # (N, known)
        future_known = known[n : n + H] if self.known else np.zeros((H, 0), np.float32)
        # the calendar of the input rows only: a file may hold years of rows before them
        times = np.concatenate([calendar_features(series.dates[history]), known[history]], 1)
        text = list(format_dates(list(series.dates[history]) + list(dates), series.date_text))
        return Ahead(
            ends=Windows(
                values=scaled[history],
                times=times,
                input_length=cfg.input_length,
                horizon=0,
                starts=[(0, 0)],
                inputs=self.inputs,
                targets=len(self.targets),
            ),
            features=np.concatenate([calendar_features(dates), future_known], 1)[None],
            steps=[list(dates)],
            given=text[: cfg.input_length],
            later=text[cfg.input_length :],
            read=series.values[history],
        )

    def forecast_series(self, series, name: str = "<rows>") -> list[dict]:
        """:meth:`forecast` of rows already read by :meth:`read`."""
        cfg = self.cfg
        dates, values = self.predict_arrays(series, name)
        names = [self.targets] + [
            [column_name(c, level) for c in self.targets] for level in cfg.quantiles
        ]
        rows = []
        for date, row in zip(format_dates(dates, series.date_text), values):  # row (C, 1 + Q)
            fields = {cfg.date_column: date}
            for k, columns in enumerate(names):
                fields.update({c: float(f"{v:.6g}") for c, v in zip(columns, row[:, k])})
            rows.append(fields)
        return rows


def _run_dir(path: str | Path) -> Path:
    """The run directory of ``path``: itself, or the run of a checkpoint file in it."""
    path = Path(path)
    return path.parent.parent if path.is_file() else path


def _layout_of(run_dir: Path) -> str:
    """The layout a run's config.yaml names ("wide" where it has none: a blend folder, or
    a run too damaged to say, which loading then reports)."""
    if not (run_dir / runs.CONFIG).is_file():
        return "wide"
    try:
        return runs.read_config(run_dir, ForecastConfig).layout.name
    except UserError:
        return "wide"


def _one_series_set(**given) -> None:
    """A UserError naming the first of ``given`` that is set: it is for a global run."""
    for name, value in given.items():
        if value is not None:
            raise UserError(f"{name}= is for a global run (layout=long); this run has one CSV")


def _unit(dates: list) -> str:
    """What the forecast's steps are called ("hours", "weeks", ...), by the calendar of its
    dates; "steps" where they have none (one date, or a known covariate's irregular rows)."""
    try:
        return infer_frequency(dates).unit
    except UserError:
        return "steps"


def _observed(series) -> int:
    """Rows with every value: those before the blank tail of known-future rows."""
    return len(series.dates) - int(np.isnan(series.values).any(1).sum())


def predict_csv(
    run_dir: str | Path | Forecaster, csv_path: str | Path | None = None, **selected
) -> str:
    """The forecast of the ``horizon`` rows after the file's last row (by default the CSV
    the run was trained on), as CSV text with the file's date column and the run's columns,
    in the original units; a global run's as a long table (``selected``: its ``series``
    and ``known``, as :meth:`Forecaster.predict` takes them)."""
    model = run_dir if isinstance(run_dir, Forecaster) else Forecaster(run_dir)
    rows = model.predict(csv_path, **selected)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerows([list(rows[0]), *([row[k] for k in row] for row in rows)])
    return out.getvalue()
