"""The long-horizon forecasting protocol (Informer, Autoformer, PatchTST) on a series:
fixed split borders, train-only z-scores, calendar features, and sliding windows stepping
by one as a Dataset.

Legend: N rows, C channels, L input length, H horizon.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from transduce.errors import UserError

# ETT's fixed borders: 12 months of train, 4 of validation, 4 of test, 30-day months.
ETT_MONTHS = (12, 4, 4)
ETT_ROWS_PER_DAY = {"ett_hour": 24, "ett_minute": 96}


def split_borders(n_rows: int, input_length: int, scheme: str) -> dict[str, tuple[int, int]]:
    """Row ranges [start, end) of each split. Validation and test ranges start
    ``input_length`` rows before their border, so their first window's forecast starts on it.

    Args:
        scheme: "ett_hour" / "ett_minute" (12/4/4 months of 30 days), "ratio" (70/10/20:
            int(0.7 N) train rows, int(0.2 N) test rows, the rest validation), or
            "rows:A,B,C" (train rows [0, A), validation [A, B), test [B, C): the protocol
            moved to any stretch of the file, e.g. to backtest on rows before the test
            split).
    """
    if scheme.startswith("rows:"):
        train_end, val_end, test_end = _row_borders(scheme, n_rows)
    elif scheme in ETT_ROWS_PER_DAY:
        month = 30 * ETT_ROWS_PER_DAY[scheme]
        ends = np.cumsum(ETT_MONTHS) * month
        if n_rows < ends[-1]:
            raise UserError(
                f"{scheme} borders need {ends[-1]} rows, the file has {n_rows}; use split=ratio"
            )
        train_end, val_end, test_end = (int(e) for e in ends)
    elif scheme == "ratio":
        train_end = int(0.7 * n_rows)
        test_rows = int(0.2 * n_rows)
        val_end, test_end = n_rows - test_rows, n_rows
    else:
        raise UserError(f"split must be ett_hour, ett_minute, ratio or rows:A,B,C, not {scheme!r}")
    return {
        "train": (0, train_end),
        "val": (train_end - input_length, val_end),
        "test": (val_end - input_length, test_end),
    }


def _row_borders(scheme: str, n_rows: int) -> tuple[int, int, int]:
    """The three row borders of a "rows:A,B,C" split, checked against the file."""
    fields = scheme[len("rows:") :].split(",")
    try:
        ends = [int(f) for f in fields]
    except ValueError:
        ends = []
    if len(ends) != 3 or not 0 < ends[0] < ends[1] < ends[2]:
        raise UserError(
            f"split={scheme}: give three increasing row numbers, rows:A,B,C "
            "(train ends at A, validation at B, test at C)"
        )
    if ends[2] > n_rows:
        raise UserError(
            f"split={scheme}: the test split ends at row {ends[2]}, the file has "
            f"{n_rows} rows; lower C to at most {n_rows}"
        )
    return ends[0], ends[1], ends[2]


def default_scheme(path: str | os.PathLike) -> str:
    """The protocol's split for a file: ETT borders for ETTh*/ETTm*, else 70/10/20."""
    name = Path(path).name
    return (
        "ett_hour"
        if name.startswith("ETTh")
        else "ett_minute"
        if name.startswith("ETTm")
        else "ratio"
    )


@dataclass(frozen=True)
class Scaler:
    """Per-column z-scores, fitted on training rows only (population std, as the protocol)."""

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, values: np.ndarray) -> Scaler:
        std = values.std(axis=0)
        return cls(values.mean(axis=0), np.where(std > 0, std, 1.0))

    def transform(self, values: np.ndarray) -> np.ndarray:
        return ((values - self.mean) / self.std).astype(np.float32)

    def inverse(self, values: np.ndarray) -> np.ndarray:
        return values * self.std + self.mean

    def head(self, n: int) -> Scaler:
        """The scaler of the first ``n`` columns (the forecast ones)."""
        return Scaler(self.mean[:n], self.std[:n])


# The calendar's columns at the head of every step's time features (x_time, y_time); the
# models' configs read the width from here (ModelConfig.time_features).
CALENDAR_FEATURES = 4


def calendar_features(dates: list[datetime]) -> np.ndarray:
    """(N, CALENDAR_FEATURES): hour of day, day of week, day of month, day of year, each in
    [-0.5, 0.5]."""
    return np.array(
        [
            [
                d.hour / 23 - 0.5,
                d.weekday() / 6 - 0.5,
                (d.day - 1) / 30 - 0.5,
                (d.timetuple().tm_yday - 1) / 365 - 0.5,
            ]
            for d in dates
        ],
        dtype=np.float32,
    )


def window_count(start: int, end: int, input_length: int, horizon: int) -> int:
    return max(end - start - input_length - horizon + 1, 0)


class Windows(Dataset):
    """Every (input, target) window of rows [start, end), stepping by one row.

    Item i: x = rows [start + i, start + i + L) of the first ``inputs`` columns, y = the next
    H rows of the first ``targets`` columns, plus the rows' known features (calendar, and
    known-future covariates). Tensors: x (L, C), y (H, C'), x_time (L, F), y_time (H, F).
    """

    def __init__(
        self,
        *,
        values: np.ndarray,
        times: np.ndarray,
        start: int,
        end: int,
        input_length: int,
        horizon: int,
        inputs: int | None = None,
        targets: int | None = None,
    ) -> None:
        self.values, self.times = torch.from_numpy(values), torch.from_numpy(times)
        self.start, self.input_length, self.horizon = start, input_length, horizon
        self.inputs, self.targets = inputs or values.shape[1], targets or values.shape[1]
        self.count = window_count(start, end, input_length, horizon)

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> tuple[torch.Tensor, ...]:
        if not 0 <= i < self.count:
            raise IndexError(i)
        a = self.start + i
        b = a + self.input_length
        c = b + self.horizon
        return (
            self.values[a:b, : self.inputs],
            self.values[b:c, : self.targets],
            self.times[a:b],
            self.times[b:c],
        )
