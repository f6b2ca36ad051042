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

    def tail(self, n: int) -> Scaler:
        """The scaler of the last ``n`` columns (the known covariates)."""
        return Scaler(self.mean[len(self.mean) - n :], self.std[len(self.std) - n :])


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


# How windows are put on a common scale: "" (the values come scaled, as the long-horizon
# protocol's train-row z-scores do), or per window from its own input steps (see Windows).
WINDOW_SCALINGS = ("", "mean", "log")


class Windows(Dataset):
    """(input, target) windows of one or more series, the one cut of every forecasting run.

    ``values`` is a (T, C) array, or a list of them (one per series, of any lengths), and
    ``times`` its known features (calendar, known-future covariates) alike; window i starts
    at row ``starts[i]`` of series ``series[i]``: x = the next L rows of the first
    ``inputs`` columns, y = the H after them of the first ``targets`` columns, and those
    rows' features. Rows before a series' first repeat it (a short series' window is padded
    on the left). Without ``starts``, every window of rows [start, end) of the one series,
    stepping by one row (the long-horizon protocol's split).

    ``scaling``: with ``mean`` each window's target columns are divided by the mean absolute
    value of their input steps (DeepAR scales by the mean of its conditioning range); with
    ``log`` (positive series) they become log y less the mean log y of their input steps;
    :meth:`restore` puts forecasts back. Tensors: x (L, C), y (H, C'), x_time (L, F),
    y_time (H, F).
    """

    def __init__(
        self,
        *,
        values,
        times,
        input_length: int,
        horizon: int,
        start: int = 0,
        end: int | None = None,
        starts=None,
        inputs: int | None = None,
        targets: int | None = None,
        scaling: str = "",
    ) -> None:
        self.values = [values] if isinstance(values, np.ndarray) else list(values)
        self.times = [times] if isinstance(times, np.ndarray) else list(times)
        self.tensors = [
            (torch.from_numpy(v), torch.from_numpy(t)) for v, t in zip(self.values, self.times)
        ]
        self.input_length, self.horizon, self.scaling = input_length, horizon, scaling
        width = self.values[0].shape[1]
        self.inputs, self.targets = inputs or width, targets or width
        if starts is None:
            end = len(self.values[0]) if end is None else end
            count = window_count(start, end, input_length, horizon)
            starts = np.stack([np.zeros(count, np.int64), np.arange(start, start + count)], 1)
        self.start = start  # the first window's row, for a split of one series
        self.starts = np.asarray(starts, np.int64).reshape(-1, 2)
        self.count = len(self.starts)

    def __len__(self) -> int:
        return self.count

    def rows(self, i: int) -> tuple[int, np.ndarray | slice]:
        """(the series, its rows: a slice, or indices where the window reaches before the
        series' first row) of window ``i``."""
        s, a = (int(n) for n in self.starts[i])
        c = a + self.input_length + self.horizon
        if a >= 0 and c <= len(self.values[s]):
            return s, slice(a, c)
        return s, np.clip(np.arange(a, c), 0, len(self.values[s]) - 1)

    def window(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values (L + H, C) on the common scale, features (L + H, F), the targets' scale:
        (C',) what each was divided by, or for ``log`` the mean log subtracted)."""
        s, rows = self.rows(i)
        v, f = self.values[s][rows], self.times[s][rows]
        if not self.scaling:
            return v, f, np.ones(self.targets)
        L, T = self.input_length, self.targets
        v = np.array(v)  # a copy: the targets are scaled in place
        scale = np.ones(T)
        for c in range(T):  # a column at a time: its sums in the order one series' are
            if self.scaling == "log":
                v[:, c] = np.log(v[:, c])
                scale[c] = float(v[:L, c].mean())
                v[:, c] = v[:, c] - np.float32(scale[c])
            else:
                # summed in float64: values near float32's limit overflowed a float32 sum
                scale[c] = float(np.abs(v[:L, c]).mean(dtype=np.float64)) or 1.0
                v[:, c] = v[:, c] / np.float32(scale[c])
        return v, f, scale

    def restore(self, values: np.ndarray, scales: np.ndarray) -> np.ndarray:
        """``values`` on the windows' common scale back in their series' units: ``scales``
        are what :meth:`batch` gave, shaped to broadcast against ``values``."""
        if self.scaling == "log":
            return np.exp(values + scales)
        if self.scaling == "mean":
            return values * scales
        return values

    def batch(self, indices) -> tuple:
        """(x, y, x_time, y_time) of the windows ``indices``, stacked, and (B, C') each
        one's scale (see :meth:`window`)."""
        items = [self.item(int(i)) for i in indices]
        stacked = [torch.stack(t) for t in zip(*(item[:4] for item in items))]
        return (*stacked, np.stack([item[4] for item in items]))

    def __getitem__(self, i: int) -> tuple[torch.Tensor, ...]:
        return self.item(i)[:4]

    def item(self, i: int) -> tuple:
        """Window ``i``'s x, y, x_time, y_time and its targets' scale."""
        if not 0 <= i < self.count:
            raise IndexError(i)
        L, C = self.input_length, self.inputs
        if self.scaling:
            values, features, scale = self.window(i)
            v, f = torch.from_numpy(values), torch.from_numpy(features)
        else:
            s, rows = self.rows(i)
            scale = np.ones(self.targets)
            if isinstance(rows, slice):  # views, as the protocol's windows always are
                v, f = self.tensors[s][0][rows], self.tensors[s][1][rows]
            else:
                v, f = (torch.from_numpy(a[rows]) for a in (self.values[s], self.times[s]))
        return v[:L, :C], v[L:, : self.targets], f[:L], f[L:], scale
