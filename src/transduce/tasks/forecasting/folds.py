"""How a run's data is cut into backtest folds, a strategy each layout names
(``BACKTEST``): a wide CSV's rows before its test split (:class:`RowFolds`), or the ends
of a long table's series (:class:`HoldoutFolds`). Each plans its folds, scores a trained
fold, and says what the backtest's figure draws."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from transduce.data.calendar import format_dates
from transduce.data.panel import read_panel, step_texts
from transduce.data.windows import split_borders
from transduce.errors import UserError
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import load_forecast_data, split_scheme, windowed_borders
from transduce.tasks.forecasting.panel import test_run
from transduce.tasks.forecasting.rundir import evaluate_run


def fold_borders(
    n_rows: int, scheme: str, folds: int, step: int | None = None
) -> list[tuple[int, int, int]]:
    """The (A, B, C) row borders of each fold's ``split=rows:A,B,C``, latest first.

    Args:
        scheme: the protocol's split (see :func:`~transduce.data.timeseries.split_borders`).
        step: rows between one fold's borders and the next's (default: the length of the
            protocol's validation split).

    Raises:
        UserError: ``folds`` or ``step`` below 1, or so many folds that the earliest would
            train on no row.
    """
    if folds < 1:
        raise UserError(f"--folds must be at least 1, not {folds}")
    if step is not None and step < 1:
        raise UserError(f"--step must be at least 1 row, not {step}")
    borders = split_borders(n_rows, 0, scheme)
    val_start, test_start = borders["val"]
    test_rows = borders["test"][1] - test_start
    step = step or test_start - val_start
    first_train_end = val_start - test_rows  # fold 1's: its splits end test_rows earlier
    if first_train_end < 1:
        raise UserError(
            f"split={scheme} on {n_rows} rows: fold 1's test split ({test_rows} "
            f"rows) ends where the protocol's begins, which leaves it no row to "
            "train on; backtest a longer series"
        )
    fit = (first_train_end - 1) // step + 1
    if folds > fit:
        raise UserError(
            f"--folds {folds} with --step {step}: fold {fit + 1} would have no "
            f"row to train on; at most {fit} fold{'s' * (fit > 1)} fit "
            "(lower --folds or --step)"
        )
    return [
        (first_train_end - k * step, test_start - test_rows - k * step, test_start - k * step)
        for k in range(folds)
    ]


def fold_configs(
    cfg: ForecastConfig, n_rows: int, folds: int, step: int | None = None
) -> list[tuple[tuple[int, int, int], ForecastConfig]]:
    """Each fold's (A, B, C) borders and ``cfg`` with its ``split=rows:A,B,C``, for a
    series of ``n_rows`` rows; every fold is checked (enough rows for a window in each
    split) before any is trained."""
    scheme = split_scheme(cfg)
    out = []
    for k, (a, b, c) in enumerate(fold_borders(n_rows, scheme, folds, step), 1):
        fold = dataclasses.replace(cfg, split=f"rows:{a},{b},{c}")
        try:
            windowed_borders(fold, n_rows)
        except UserError as e:
            raise UserError(
                f"fold {k} (split={fold.split}): {e}; lower --folds or --step, "
                "or shorten input_length/horizon"
            ) from None
        out.append(((a, b, c), fold))
    return out


@dataclass(frozen=True)
class Fold:
    """One fold: its config and the setting that makes it that fold, what its report line
    calls its test steps, and where its train, validation and test parts end on the
    series the figure draws (A, B, C)."""

    cfg: ForecastConfig
    setting: str
    label: str
    borders: tuple[int, int, int]


class RowFolds:
    """A wide CSV's folds: the protocol's split moved back ``step`` rows at a time (see the
    module's text), each scored on its test split's windows (MSE and MAE on the fold's
    z-scores)."""

    measures = ("mse", "mae")

    def __init__(self, cfg: ForecastConfig, data) -> None:
        self.cfg, self.data = cfg, data

    def plan(self, folds: int, step: int | None) -> list[Fold]:
        n = len(self.data.series.dates)
        return [
            Fold(fold, fold.split, f"test rows {b}-{c - 1}", (a, b, c))
            for (a, b, c), fold in fold_configs(self.cfg, n, folds, step)
        ]

    def score(self, fold_dir: Path) -> dict:
        return evaluate_run(fold_dir)

    def size(self, test: dict) -> str:
        return f"{test['windows']} windows"

    def series(self) -> tuple[list, np.ndarray, str, list[str]]:
        """(steps, values, name) of the series the figure draws, and the protocol's
        borders on it (none where there is no such split)."""
        data = self.data
        protocol = tuple(data.borders[s][1] for s in ("train", "val", "test"))
        return data.series.dates, data.series.values[:, 0], data.target_columns[0], protocol

    def dates(self, fold: Fold) -> list[str]:
        _, b, c = fold.borders
        dates = self.data.series.dates
        return format_dates([dates[b], dates[c - 1]], self.data.series.date_text)


class HoldoutFolds:
    """A long table's folds: fold k leaves out every series' last ``holdout`` + horizon +
    (k - 1) × ``step`` steps (``step`` defaults to the horizon), trains on the rest (its
    last horizon validating) and is scored on the first horizon left out (sMAPE, MASE and
    OWA, as ``forecast test`` scores a global run). Fold 1 is scored on each series' last
    horizon."""

    measures = ("smape", "mase", "owa")

    def __init__(self, cfg: ForecastConfig, data) -> None:
        self.cfg, self.data = cfg, data
        lengths = [len(v) for v in data.series.values]
        self.shown = int(np.argmax(lengths))  # the figure draws the longest series

    def plan(self, folds: int, step: int | None) -> list[Fold]:
        if folds < 1:
            raise UserError(f"--folds must be at least 1, not {folds}")
        if step is not None and step < 1:
            raise UserError(f"--step must be at least 1 step, not {step}")
        H, base = self.cfg.horizon, self.cfg.layout.holdout
        step = step or H
        n = len(self.data.series.values[self.shown]) + base  # the whole series
        out = []
        for k in range(folds):
            holdout = base + H + k * step
            fold = dataclasses.replace(
                self.cfg, layout=dataclasses.replace(self.cfg.layout, holdout=holdout)
            )
            try:
                load_forecast_data(fold)
            except UserError as e:
                raise UserError(
                    f"fold {k + 1} (holdout={holdout}): {e}; lower --folds or --step"
                ) from None
            borders = (n - holdout - H, n - holdout, n - holdout + H)
            out.append(Fold(fold, f"holdout={holdout}", f"holdout={holdout}", borders))
        return out

    def score(self, fold_dir: Path) -> dict:
        return test_run(fold_dir)

    def size(self, test: dict) -> str:
        return f"{test['series']} series"

    def series(self) -> tuple[list, np.ndarray, str, tuple]:
        panel = self.whole
        s = self.shown
        return panel.steps[s], panel.values[s], f"series {panel.ids[s]}", None

    @cached_property
    def whole(self):
        """The whole table, the steps any holdout leaves out included (read once)."""
        names = tuple(self.cfg.input_list() + self.cfg.known_list())
        return read_panel(self.cfg.csv, known=names)

    def dates(self, fold: Fold) -> list[str]:
        _, b, c = fold.borders
        steps = self.whole.steps[self.shown]
        return step_texts([steps[b], steps[c - 1]])
