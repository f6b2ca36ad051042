"""Time series from CSV: dates checked in order, numbers checked finite and within
float32's range, each fault named by file, line and column. The long-horizon protocol's
borders, scaler and windows are in :mod:`transduce.data.windows`.

Legend: N rows, C channels.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from transduce.data.calendar import infer_frequency
from transduce.data.text import decode_utf8
from transduce.errors import UserError

DATE_FORMATS = ("%Y/%m/%d %H:%M", "%Y/%m/%d", "%m/%d/%Y %H:%M", "%m/%d/%Y")
DAY_FIRST = {"%m/%d/%Y %H:%M": "%d/%m/%Y %H:%M", "%m/%d/%Y": "%d/%m/%Y"}
# a date with the year last, as spreadsheets write it: its first two numbers
SLASHED = re.compile(r"\s*(\d{1,2})/(\d{1,2})/\d{4}(\s|$)")
SPLITS = ("train", "val", "test")
log = logging.getLogger("transduce")


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
            raise UserError(
                f"{self.path}: no column {missing[0]!r}; columns are {', '.join(self.columns)}"
            )
        index = [self.columns.index(c) for c in columns]
        return Series(
            self.dates, list(columns), self.values[:, index], self.path, self.lines, self.date_text
        )


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


def reads_day_first(path: str, texts: list[str], lines: list[int]) -> bool:
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
        raise UserError(
            f"{path}:{day[0]}: date {day[1].strip()!r} puts the day first, "
            f"line {month[0]}'s {month[1].strip()!r} the month; write every date "
            "the same way, best as ISO 8601 (2016-07-01)"
        )
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


def read_series(
    path: str | os.PathLike, date_column: str = "date", columns: list[str] | None = None
) -> Series:
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


def parse_series(
    text: str,
    path: str,
    date_column: str = "date",
    columns: list[str] | None = None,
    blank_tail: tuple[str, ...] = (),
) -> Series:
    """:func:`read_series` of CSV text; ``path`` names it in errors. ``blank_tail``: columns
    that may be empty (read as NaN) in the last rows, and only there: the future rows whose
    known covariates are given and whose forecast columns are not."""
    # size: one pass over the rows, each fault named by line and column as it is met
    text = text.removeprefix("\ufeff")  # a byte-order mark
    reader = csv.reader(io.StringIO(text, newline=""))
    header = [h.strip() for h in next(reader, [])]
    if not header:
        raise UserError(f"{path}: empty file; expected a header and rows")
    other = [
        name
        for mark, name in ((";", "semicolon"), ("\t", "tab"), ("|", "bar"))
        if len(header) == 1 and mark in header[0]
    ]
    if other:  # a European spreadsheet's export, say: the header reads as one column
        raise UserError(
            f"{path}: the header is one field, {header[0][:60]!r}: the file looks "
            f"{other[0]}-separated; save it comma-separated (decimal points, "
            "not commas)"
        )
    if date_column not in header:
        raise UserError(
            f"{path}: no {date_column!r} column in the header (it has "
            f"{', '.join(header[:8])}); set date_column"
        )
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise UserError(
            f"{path}: the header names column {twice[0]!r} more than once; "
            "rename the columns so that each name is unique"
        )
    d = header.index(date_column)
    if len(header) == 1:
        raise UserError(
            f"{path}: only a date column ({date_column!r}); add the columns of values to forecast"
        )
    wanted = list(columns) if columns else [h for h in header if h != date_column]
    if date_column in wanted:
        raise UserError(
            f"{path}: {date_column!r} is the date column, not a value column; "
            "name value columns in columns, inputs and known"
        )
    missing = [c for c in wanted if c not in header]
    if missing:
        raise UserError(
            f"{path}: no column {missing[0]!r}; columns are "
            f"{', '.join(h for h in header if h != date_column)}"
        )
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
    body, lines = _without_repeats(path, body, lines)
    day_first = reads_day_first(path, [row[d] for row in body], lines)
    dates, rows = [], []
    for row, start in zip(body, lines):
        dates.append(_read_date(path, start, row[d], dates[-1] if dates else None, day_first))
        rows.append(
            [
                math.nan
                if wanted[k] in blank_tail and not row[i].strip()
                else _read_number(path, start, wanted[k], row[i])
                for k, i in enumerate(index)
            ]
        )
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(wanted))
    blank = np.isnan(values).any(1)
    if blank.any():  # only a tail of rows may be blank
        first = int(np.argmax(blank))
        if not blank[first:].all():
            empty = [c for c, v in zip(wanted, values[first]) if np.isnan(v)]
            raise UserError(
                f"{path}:{lines[first]}: {', '.join(empty)} "
                f"{'is' if len(empty) == 1 else 'are'} blank, but later rows have "
                "values; only the last rows (the future) may be blank"
            )
    return Series(dates, wanted, values.astype(np.float32), str(path), lines, body[-1][d].strip())


def _without_repeats(path: str, body: list, lines: list) -> tuple[list, list]:
    """The rows without those that repeat the row before them exactly (a date and every
    value; the Weather set of the long-horizon benchmarks holds one), with a note naming
    them. A date repeated with other values is refused by :func:`_read_date`."""
    kept, kept_lines, dropped = [], [], []
    for row, line in zip(body, lines):
        if kept and [c.strip() for c in row] == [c.strip() for c in kept[-1]]:
            dropped.append(line)
            continue
        kept.append(row)
        kept_lines.append(line)
    if dropped:
        where = ", ".join(map(str, dropped[:5])) + (", …" if len(dropped) > 5 else "")
        log.warning(
            f"transduce: note: {path}: line{'s' if len(dropped) > 1 else ''} {where} "
            f"{'repeat' if len(dropped) > 1 else 'repeats'} the row before exactly; read once"
        )
    return kept, kept_lines


def _read_date(
    path: str, line: int, field: str, previous: datetime | None, day_first: bool = False
) -> datetime:
    try:
        date = parse_date(field, day_first)
    except ValueError:
        raise UserError(
            f"{path}:{line}: cannot read date {field!r} (use ISO 8601, e.g. 2016-07-01 00:00:00)"
        ) from None
    if previous is not None:
        if (date.tzinfo is None) != (previous.tzinfo is None):
            raise UserError(
                f"{path}:{line}: date {field!r} "
                f"{'has no' if date.tzinfo is None else 'has a'} time zone, the "
                "previous row's not; give every date a time zone or none"
            )
        if date == previous:
            raise UserError(
                f"{path}:{line}: date {field.strip()} repeats the previous row's with other "
                "values; keep one row per date"
            )
        if date <= previous:
            raise UserError(
                f"{path}:{line}: date {field.strip()} does not come after the "
                "previous row's; sort the file by date and remove duplicates"
            )
    return date


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _read_number(path: str, line: int, column: str, field: str) -> float:
    try:
        value = float(field)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise UserError(
            f"{path}:{line}: column {column!r} holds {field!r}, not a number; "
            "fill or drop that row, or leave the column out (columns=a,b,...)"
        )
    if abs(value) > FLOAT32_MAX:  # it would become inf in the float32 the models compute in
        raise UserError(
            f"{path}:{line}: column {column!r} holds {field.strip()}, beyond the "
            f"±{FLOAT32_MAX:.1e} that float32 holds; rescale the column (e.g. "
            "into other units) or drop that row"
        )
    return value
