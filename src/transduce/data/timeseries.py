"""Time series from CSV, and the long-horizon forecasting protocol (Informer, Autoformer,
PatchTST): fixed split borders, train-only z-scores, sliding windows stepping by one.

Legend: N rows, C channels, L input length, H horizon.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from transduce.data.calendar import infer_frequency
from transduce.data.text import decode_utf8
from transduce.errors import UserError

DATE_FORMATS = ("%Y/%m/%d %H:%M", "%Y/%m/%d", "%m/%d/%Y %H:%M", "%m/%d/%Y")
DAY_FIRST = {"%m/%d/%Y %H:%M": "%d/%m/%Y %H:%M", "%m/%d/%Y": "%d/%m/%Y"}
# a date with the year last, as spreadsheets write it: its first two numbers
SLASHED = re.compile(r"\s*(\d{1,2})/(\d{1,2})/\d{4}(\s|$)")
SPLITS = ("train", "val", "test")
# ETT's fixed borders: 12 months of train, 4 of validation, 4 of test, 30-day months.
ETT_MONTHS = (12, 4, 4)
ETT_ROWS_PER_DAY = {"ett_hour": 24, "ett_minute": 96}


@dataclass(frozen=True)
class Series:
    """A multivariate series read from a CSV file.

    Attributes:
        dates: one timestamp per row, strictly increasing.
        columns: the names of the C value columns.
        values: (N, C) float32.
        path: the file it came from (for messages).
        lines: the file's line of each row (for messages), when read from a file.
        date_text: the last row's date as the file writes it, so that the dates after it
            can be written the same way.
    """

    dates: list[datetime]
    columns: list[str]
    values: np.ndarray
    path: str
    lines: list[int] | None = None
    date_text: str = ""

    def select(self, columns: list[str]) -> Series:
        """The same rows with only ``columns`` (in that order)."""
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise UserError(f"{self.path}: no column {missing[0]!r}; columns are "
                            f"{', '.join(self.columns)}")
        index = [self.columns.index(c) for c in columns]
        return Series(self.dates, list(columns), self.values[:, index], self.path, self.lines,
                      self.date_text)


def parse_date(text: str, day_first: bool = False) -> datetime:
    """ISO 8601, ``1990/1/1 0:00``, or ``1/31/1990`` (``31/1/1990`` with ``day_first``)."""
    try:
        return datetime.fromisoformat(text.strip())
    except ValueError:
        pass
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text.strip(), DAY_FIRST.get(fmt, fmt) if day_first else fmt)
        except ValueError:
            continue
    raise ValueError(text)


def _day_first(path: str, texts: list[str], lines: list[int]) -> bool:
    """Whether the dates written with the year last (``01/02/2009``) put the day first: a
    first number above 12 says so, a second one above 12 says the month is first (as US
    spreadsheets write it). Where every such date reads both ways, the reading whose dates
    step evenly wins (a monthly series on the 1st, day first, read month first is twelve
    days a year); where both or neither do, month first.

    Raises:
        UserError: one date says day first and another month first.
    """
    pairs = [(line, text, SLASHED.match(text)) for line, text in zip(lines, texts)]
    pairs = [(line, text, int(m[1]), int(m[2])) for line, text, m in pairs if m]
    day = next(((line, text) for line, text, a, _ in pairs if a > 12), None)
    month = next(((line, text) for line, text, _, b in pairs if b > 12), None)
    if day and month:
        raise UserError(f"{path}:{day[0]}: date {day[1].strip()!r} puts the day first, "
                        f"line {month[0]}'s {month[1].strip()!r} the month; write every date "
                        "the same way, best as ISO 8601 (2016-07-01)")
    if day or month or len(pairs) < 2:
        return day is not None

    def even(day_first: bool) -> bool:
        try:
            dates = [parse_date(text, day_first) for text in texts]
            if any(b <= a for a, b in zip(dates, dates[1:])):
                return False
            infer_frequency(dates)
        except (ValueError, TypeError, UserError):
            return False
        return True

    return not even(False) and even(True)


def read_series(path: str | os.PathLike, date_column: str = "date",
                columns: list[str] | None = None) -> Series:
    """Read a CSV with a header, a date column and numeric columns (only ``columns``, in
    that order, when given: other columns may hold anything).

    Raises:
        UserError: a missing file, no date column, a column named twice, a missing or
            non-numeric value (named by line and column), dates that mix time zones with
            none, or dates that do not increase.
    """
    path = Path(path)
    try:
        text = decode_utf8(path.read_bytes(), str(path))
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    return parse_series(text, str(path), date_column, columns)


def parse_series(text: str, path: str, date_column: str = "date",
                 columns: list[str] | None = None, blank_tail: tuple[str, ...] = ()) -> Series:
    """:func:`read_series` of CSV text; ``path`` names it in errors. ``blank_tail``: columns
    that may be empty (read as NaN) in the last rows, and only there: the future rows whose
    known covariates are given and whose forecast columns are not."""
    text = text.removeprefix("\ufeff")  # a byte-order mark
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader, [])]
    if not header:
        raise UserError(f"{path}: empty file; expected a header and rows")
    other = [name for mark, name in ((";", "semicolon"), ("\t", "tab"), ("|", "bar"))
             if len(header) == 1 and mark in header[0]]
    if other:  # a European spreadsheet's export, say: the header reads as one column
        raise UserError(f"{path}: the header is one field, {header[0][:60]!r}: the file looks "
                        f"{other[0]}-separated; save it comma-separated (decimal points, "
                        "not commas)")
    if date_column not in header:
        raise UserError(f"{path}: no {date_column!r} column in the header (it has "
                        f"{', '.join(header[:8])}); set date_column")
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise UserError(f"{path}: the header names column {twice[0]!r} more than once; "
                        "rename the columns so that each name is unique")
    d = header.index(date_column)
    if len(header) == 1:
        raise UserError(f"{path}: only a date column ({date_column!r}); add the columns of "
                        "values to forecast")
    wanted = list(columns) if columns else [h for h in header if h != date_column]
    if date_column in wanted:
        raise UserError(f"{path}: {date_column!r} is the date column, not a value column; "
                        "name value columns in columns, inputs and known")
    missing = [c for c in wanted if c not in header]
    if missing:
        raise UserError(f"{path}: no column {missing[0]!r}; columns are "
                        f"{', '.join(h for h in header if h != date_column)}")
    index = [header.index(c) for c in wanted]
    body, lines = [], []
    line = reader.line_num
    for row in reader:
        start, line = line + 1, reader.line_num  # a quoted field may span lines
        if len(row) != len(header):
            raise UserError(f"{path}:{start}: {len(row)} fields, the header has {len(header)}")
        body.append(row)
        lines.append(start)
    if not body:
        raise UserError(f"{path}: a header but no rows")
    day_first = _day_first(path, [row[d] for row in body], lines)
    dates, rows = [], []
    for row, start in zip(body, lines):
        dates.append(_read_date(path, start, row[d], dates[-1] if dates else None, day_first))
        rows.append([math.nan if wanted[k] in blank_tail and not row[i].strip() else
                     _read_number(path, start, wanted[k], row[i])
                     for k, i in enumerate(index)])
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(wanted))
    blank = np.isnan(values).any(1)
    if blank.any():  # only a tail of rows may be blank
        first = int(np.argmax(blank))
        if not blank[first:].all():
            empty = [c for c, v in zip(wanted, values[first]) if np.isnan(v)]
            raise UserError(f"{path}:{lines[first]}: {', '.join(empty)} "
                            f"{'is' if len(empty) == 1 else 'are'} blank, but later rows have "
                            "values; only the last rows (the future) may be blank")
    return Series(dates, wanted, values.astype(np.float32), str(path), lines,
                  body[-1][d].strip())


def _read_date(path: str, line: int, field: str, previous: datetime | None,
               day_first: bool = False) -> datetime:
    try:
        date = parse_date(field, day_first)
    except ValueError:
        raise UserError(f"{path}:{line}: cannot read date {field!r} (use ISO 8601, "
                        "e.g. 2016-07-01 00:00:00)") from None
    if previous is not None:
        if (date.tzinfo is None) != (previous.tzinfo is None):
            raise UserError(f"{path}:{line}: date {field!r} "
                            f"{'has no' if date.tzinfo is None else 'has a'} time zone, the "
                            "previous row's not; give every date a time zone or none")
        if date <= previous:
            raise UserError(f"{path}:{line}: date {field.strip()} does not come after the "
                            "previous row's; sort the file by date and remove duplicates")
    return date


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _read_number(path: str, line: int, column: str, field: str) -> float:
    try:
        value = float(field)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise UserError(f"{path}:{line}: column {column!r} holds {field!r}, not a number; "
                        "fill or drop that row, or leave the column out (columns=a,b,...)")
    if abs(value) > FLOAT32_MAX:  # it would become inf in the float32 the models compute in
        raise UserError(f"{path}:{line}: column {column!r} holds {field.strip()}, beyond the "
                        f"±{FLOAT32_MAX:.1e} that float32 holds; rescale the column (e.g. "
                        "into other units) or drop that row")
    return value


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
            raise UserError(f"{scheme} borders need {ends[-1]} rows, the file has {n_rows}; "
                            "use split=ratio")
        train_end, val_end, test_end = (int(e) for e in ends)
    elif scheme == "ratio":
        train_end = int(0.7 * n_rows)
        test_rows = int(0.2 * n_rows)
        val_end, test_end = n_rows - test_rows, n_rows
    else:
        raise UserError(f"split must be ett_hour, ett_minute, ratio or rows:A,B,C, not "
                        f"{scheme!r}")
    return {"train": (0, train_end), "val": (train_end - input_length, val_end),
            "test": (val_end - input_length, test_end)}


def _row_borders(scheme: str, n_rows: int) -> tuple[int, int, int]:
    """The three row borders of a "rows:A,B,C" split, checked against the file."""
    fields = scheme[len("rows:"):].split(",")
    try:
        ends = [int(f) for f in fields]
    except ValueError:
        ends = []
    if len(ends) != 3 or not 0 < ends[0] < ends[1] < ends[2]:
        raise UserError(f"split={scheme}: give three increasing row numbers, rows:A,B,C "
                        "(train ends at A, validation at B, test at C)")
    if ends[2] > n_rows:
        raise UserError(f"split={scheme}: the test split ends at row {ends[2]}, the file has "
                        f"{n_rows} rows; lower C to at most {n_rows}")
    return ends[0], ends[1], ends[2]


def default_scheme(path: str | os.PathLike) -> str:
    """The protocol's split for a file: ETT borders for ETTh*/ETTm*, else 70/10/20."""
    name = Path(path).name
    return "ett_hour" if name.startswith("ETTh") else \
        "ett_minute" if name.startswith("ETTm") else "ratio"


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


def calendar_features(dates: list[datetime]) -> np.ndarray:
    """(N, 4) hour of day, day of week, day of month, day of year, each in [-0.5, 0.5]."""
    return np.array([[d.hour / 23 - 0.5, d.weekday() / 6 - 0.5, (d.day - 1) / 30 - 0.5,
                      (d.timetuple().tm_yday - 1) / 365 - 0.5] for d in dates],
                    dtype=np.float32)


def window_count(start: int, end: int, input_length: int, horizon: int) -> int:
    return max(end - start - input_length - horizon + 1, 0)


class Windows(Dataset):
    """Every (input, target) window of rows [start, end), stepping by one row.

    Item i: x = rows [start + i, start + i + L) of the first ``inputs`` columns, y = the next
    H rows of the first ``targets`` columns, plus the rows' known features (calendar, and
    known-future covariates). Tensors: x (L, C), y (H, C'), x_time (L, F), y_time (H, F).
    """

    def __init__(self, *, values: np.ndarray, times: np.ndarray, start: int, end: int,
                 input_length: int, horizon: int, inputs: int | None = None,
                 targets: int | None = None) -> None:
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
        return (self.values[a:b, :self.inputs], self.values[b:c, :self.targets],
                self.times[a:b], self.times[b:c])
