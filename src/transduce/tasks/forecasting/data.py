"""A run's data, whatever its layout: the series read (a wide CSV by this module, a long
table by :mod:`~transduce.tasks.forecasting.panel`), scaled, and cut into the
:class:`~transduce.data.windows.Windows` that training, validation, testing, calibration and
blends read. Only the reading differs between layouts; the layout config names its reader."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader

from transduce.data.calendar import infer_frequency
from transduce.data.timeseries import SPLITS, Series, read_series
from transduce.data.windows import (
    Scaler,
    Windows,
    calendar_features,
    default_scheme,
    split_borders,
    window_count,
)
from transduce.errors import UserError
from transduce.families import resolve
from transduce.tasks.forecasting.config import ForecastConfig


@dataclass(frozen=True)
class ForecastData:
    """Everything a run needs from its data.

    Attributes:
        series: what was read: a wide CSV's :class:`Series` (the selected columns, in
            original units), or a long table's :class:`~transduce.data.panel.Panel`.
        scaler: per column (forecast ones, then inputs, then known) the z-score the windows
            carry: fitted on a wide CSV's train rows; for a long table's ``y`` the identity
            (its windows are scaled one by one), for its covariates every row's.
        borders: split → (start, end) rows of a wide CSV, validation/test reaching back
            input_length rows (none for a long table: each series' last horizon validates).
        windows: split → :class:`Windows` (train, val, and test where the data has one).
        fingerprint: of the training data, so that a resumed run can tell that ``csv`` now
            points at other data.
        columns: the model's channels: forecast columns, inputs, known covariates.
    """

    series: Series | Any
    scaler: Scaler
    borders: dict[str, tuple[int, int]]
    windows: dict[str, Windows]
    fingerprint: str | dict = ""
    targets: int = 0  # the first columns are forecast, then inputs, then known
    columns: list[str] = field(default_factory=list)

    @property
    def channels(self) -> list[str]:
        return self.columns or self.series.columns

    @property
    def target_columns(self) -> list[str]:
        return self.channels[: self.targets or len(self.channels)]

    @property
    def target_scaler(self) -> Scaler:
        return self.scaler.head(self.targets or len(self.channels))

    def scaler_state(self) -> dict:
        """The scaler as a checkpoint keeps it."""
        return {
            "mean": torch.from_numpy(np.asarray(self.scaler.mean, np.float64)),
            "std": torch.from_numpy(np.asarray(self.scaler.std, np.float64)),
            "columns": list(self.channels),
        }

    def loader(self, split: str, batch_size: int, shuffle: bool = False, generator=None):
        return DataLoader(
            self.windows[split], batch_size=batch_size, shuffle=shuffle, generator=generator
        )


def minimum_rows(scheme: str, input_length: int, horizon: int) -> int:
    """The fewest rows for which every split has at least one window."""
    if scheme != "ratio":
        return 0  # fixed borders: split_borders says how many rows they need
    n = input_length + horizon
    while True:
        b = split_borders(n, input_length, scheme)
        if all(window_count(*b[s], input_length, horizon) > 0 for s in SPLITS):
            return n
        n += 1


def split_scheme(cfg: ForecastConfig) -> str:
    """``cfg``'s split, with ``auto`` resolved from the file's name (see
    :func:`default_scheme`)."""
    return default_scheme(cfg.csv) if cfg.split == "auto" else cfg.split


def windowed_borders(cfg: ForecastConfig, n: int) -> dict[str, tuple[int, int]]:
    """The split borders of ``cfg`` on a file of ``n`` rows (see :func:`split_borders`).

    Raises:
        UserError: a split with no window of input_length + horizon (the message gives
            the minimum number of rows).
    """
    scheme = split_scheme(cfg)
    borders = split_borders(n, cfg.input_length, scheme)
    short = [s for s in SPLITS if window_count(*borders[s], cfg.input_length, cfg.horizon) < 1]
    if short:
        need = minimum_rows(scheme, cfg.input_length, cfg.horizon)
        hint = f"at least {need} rows" if need else "longer split ranges"
        raise UserError(
            f"{cfg.csv}: {n} rows leave no {short[0]} window of input_length="
            f"{cfg.input_length} + horizon={cfg.horizon}; the file needs {hint} "
            "(or shorten input_length/horizon)"
        )
    return borders


def load_forecast_data(cfg: ForecastConfig) -> ForecastData:
    """Read ``cfg.csv`` by its layout's reader (``cfg.layout.READER``) into windows."""
    return resolve(cfg.layout.READER)(cfg)


def read_wide(cfg: ForecastConfig) -> ForecastData:
    """Read the wide CSV ``cfg.csv`` and apply the long-horizon protocol.

    Raises:
        UserError: bad CSV content (see :func:`read_series`), an unknown column, no column
            left to forecast, or a file too short for the windows (the message gives the
            minimum number of rows).
    """
    covariates = cfg.input_list() + cfg.known_list()
    series = read_series(
        cfg.csv, cfg.date_column, cfg.column_list() + covariates if cfg.column_list() else None
    )
    targets = cfg.column_list() or [c for c in series.columns if c not in covariates]
    if not targets:  # else the windows' target slice would be every column, or none
        raise UserError(
            f"{cfg.csv}: every column is a covariate (inputs or known), so none "
            "is left to forecast; name it with columns=NAME or leave it out of "
            "inputs and known"
        )
    series = series.select(targets + covariates)
    # every step present: a window across a gap would pair rows a step apart that are not
    infer_frequency(series.dates, str(cfg.csv), series.lines)
    borders = windowed_borders(cfg, len(series.dates))
    train_start, train_end = borders["train"]
    scaler = Scaler.fit(series.values[train_start:train_end].astype(np.float64))
    values = scaler.transform(series.values)
    known = len(cfg.known_list())
    times = np.concatenate(
        [calendar_features(series.dates), values[:, values.shape[1] - known :]], 1
    )  # (N, 4 + known)
    inputs = len(series.columns) - known
    windows = {
        s: Windows(
            values=values,
            times=times,
            start=borders[s][0],
            end=borders[s][1],
            input_length=cfg.input_length,
            horizon=cfg.horizon,
            inputs=inputs,
            targets=len(targets),
        )
        for s in SPLITS
    }
    rows = slice(train_start, train_end)
    digest = hashlib.sha256("\x1f".join(series.columns).encode())
    digest.update(np.ascontiguousarray(series.values[rows], dtype=np.float64).tobytes())
    digest.update("\n".join(map(str, series.dates[rows])).encode())
    return ForecastData(
        series, scaler, borders, windows, digest.hexdigest()[:16], len(targets), series.columns
    )
