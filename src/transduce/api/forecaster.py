"""`transduce forecast predict`: forecast the rows after a CSV's last one, in its units."""

from __future__ import annotations

# size: the Forecaster's public methods (fit, predict, plot, test, forecast, attention, read)
# and the helpers that turn a DataFrame or CSV into the rows it reads
import contextlib
import csv
import io
import os
import re
import shutil
from pathlib import Path

import numpy as np
import torch

from transduce import runs
from transduce.api.forecast_attention import attention_of
from transduce.config import apply_mapping
from transduce.config_files import load_config
from transduce.data.calendar import format_dates, infer_frequency, next_dates
from transduce.data.text import decode_utf8
from transduce.data.timeseries import parse_series
from transduce.data.windows import calendar_features
from transduce.errors import UserError
from transduce.evaluation.quantiles import column_name
from transduce.io import write_text
from transduce.tasks.forecasting.backtesting import run_backtest
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.panel import is_global
from transduce.tasks.forecasting.rundir import check_finite, evaluate_run, load_model
from transduce.tasks.forecasting.task import train_forecaster
from transduce.viz.forecast import plot_forecast

SERIES = "series.csv"  # a DataFrame given to fit or backtest, as the run reads it


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

    # The class of each layout's runs: "long" is GlobalForecaster (api/panel.py registers it;
    # it subclasses this one, which cannot import it without a cycle).
    LAYOUTS: dict[str, type] = {}

    def __new__(cls, path: str | Path, *args, **kwargs):
        """A Forecaster of the class the run's layout needs: ``Forecaster(RUN)`` opens any
        forecasting run, one series set or many series."""
        if cls is Forecaster:
            run_dir = _run_dir(path)
            if is_global(run_dir):
                cls = Forecaster.LAYOUTS["long"]
        return super().__new__(cls)

    def __init__(self, path: str | Path) -> None:
        run_dir = _run_dir(path)
        self.run_dir = run_dir
        self.cfg, self.model, self.scaler, self.columns = load_model(run_dir)
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

    def test(self, data=None) -> dict:
        """The test split's scores, as ``forecast test`` prints them (and writes them to
        RUN/test_results.json): ``mse``, ``mae`` and ``windows`` on the normalised scale and,
        for a probabilistic run, ``rho_risk`` and ``coverage``. It reads the CSV the run was
        trained on; ``data`` (a table of each series' next steps) is for a global run."""
        if data is not None:
            raise UserError(
                f"{self.run_dir}: a run of one CSV is scored on its own test split; a test "
                "table is for a global run (layout=long)"
            )
        return evaluate_run(self.run_dir)

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
        dates, x, x_time, y_time, history = self._window(series, name)
        forecast, _ = self.model(x, x_time, y_time)  # (1, H, C, 1 + Q)
        outputs = forecast[0].double().numpy()  # (H, C, 1 + Q)
        target = self.scaler.head(len(self.targets))
        found = target.inverse(outputs.transpose(2, 0, 1)).transpose(1, 2, 0)
        return dates, check_finite(found, series.values[history], name)

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
        return attention_of(self, series, name)

    def _window(self, series, name: str):
        """(the forecast's dates, the model's inputs x, x_time, y_time, the rows it reads)
        for the ``horizon`` after ``series``'s last observed row."""
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
        x = torch.from_numpy(scaled[history, : self.inputs]).unsqueeze(0)  # (1, L, C)
        if self.known:
            dates = series.dates[n : n + H]
        else:
            dates = next_dates(series.dates, H, infer_frequency(series.dates, name, series.lines))
        known = scaled[:, self.inputs :]  # (N, known)
        future_known = known[n : n + H] if self.known else np.zeros((H, 0), np.float32)
        x_time = np.concatenate([calendar_features(series.dates[history]), known[history]], 1)
        y_time = np.concatenate([calendar_features(dates), future_known], 1)
        return (
            dates,
            x,
            torch.from_numpy(x_time).unsqueeze(0),
            torch.from_numpy(y_time).unsqueeze(0),
            history,
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


def _one_series_set(**given) -> None:
    """A UserError naming the first of ``given`` that is set: it is for a global run."""
    for name, value in given.items():
        if value is not None:
            raise UserError(f"{name}= is for a global run (layout=long); this run has one CSV")


def _name(data) -> str:
    """What an error calls ``data``: the file's path, or "<DataFrame>"."""
    return "<DataFrame>" if hasattr(data, "to_csv") else str(data)


def _in_frame(error: UserError, name: str) -> UserError:
    """An error about a DataFrame's CSV text (``name:LINE: ...``) as one about the frame:
    ``<DataFrame> row N: ...``, N its position (iloc), the header being line 1."""
    text = str(error)
    found = re.match(re.escape(name) + r":(\d+): ", text)
    if found:
        return UserError(f"<DataFrame> row {int(found.group(1)) - 2}: {text[found.end() :]}")
    return UserError(text.replace(name, "<DataFrame>", 1))


def _frame_text(frame, date_column: str = "date") -> str:
    """CSV text of a pandas DataFrame. Its index is written when named (the date), or as
    ``date_column`` when it holds dates (an unnamed DatetimeIndex, as ``pd.date_range``
    makes); a plain index of row numbers is left out."""
    index = frame.index
    if getattr(index, "name", None) is not None:
        return frame.to_csv(index=True)
    if getattr(getattr(index, "dtype", None), "kind", "") == "M":
        return frame.to_csv(index=True, index_label=date_column)
    return frame.to_csv(index=False)


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


def settings_for(data, run_dir: str | Path, config: str | Path | None, settings: dict):
    """The config of :meth:`Forecaster.fit` and :func:`backtest`: ``config``'s settings (or
    the defaults), then ``settings``, reading ``data`` (a CSV path, or a DataFrame, saved as
    RUN_DIR/series.csv)."""
    run_dir = Path(run_dir)
    frame = hasattr(data, "to_csv")
    csv_path = run_dir / SERIES if frame else Path(data)
    cfg = load_config(ForecastConfig, config, chosen=settings)
    cfg = apply_mapping(cfg, {**settings, "csv": str(csv_path.resolve())}, "settings", strict=True)
    if cfg.layout.name == "long":  # the one-CSV pipeline would read the table as channels
        raise UserError(
            "layout=long: Forecaster.fit and backtest take a run of one CSV; train a global "
            "run with `transduce forecast train csv=TABLE layout=long ... --run-dir RUN`, "
            "then transduce.load(RUN)"
        )
    if frame:  # once the settings are known good
        text = _frame_text(data, cfg.date_column)
        run_dir.mkdir(parents=True, exist_ok=True)
        write_text(csv_path, text)
    return cfg


@contextlib.contextmanager
def _frame_kept_only_if_used(data, run_dir: str | Path):
    """A DataFrame is saved as RUN_DIR/series.csv before training reads it; if the start
    fails (bad values, a file too short), that file and a folder made for it go again, as a
    failed start from a CSV path leaves nothing behind."""
    run_dir = Path(run_dir)
    fresh = hasattr(data, "to_csv") and not run_dir.exists()
    try:
        yield
    except BaseException as error:
        if fresh and run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {SERIES}:
            shutil.rmtree(run_dir)
            if isinstance(error, UserError):  # name what the user gave, not a file now gone
                raise _in_frame(error, str((run_dir / SERIES).resolve())) from None
        raise


def backtest(
    data,
    run_dir: str | Path,
    config: str | Path | None = None,
    folds: int = 3,
    step: int | None = None,
    **settings,
) -> dict:
    """Score a config on ``folds`` stretches of ``data`` before its test split, as
    ``forecast backtest`` does (see :mod:`transduce.tasks.forecasting.backtesting`); returns what
    it writes to RUN_DIR/backtest.json. ``config`` and ``settings`` as for
    :meth:`Forecaster.fit`; calling it again on the same ``run_dir`` resumes the folds."""
    with _frame_kept_only_if_used(data, run_dir):
        return run_backtest(settings_for(data, run_dir, config, settings), run_dir, folds, step)


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
