"""Many series in one long table: ``unique_id, ds, y`` (the layout of Nixtla's StatsForecast
and NeuralForecast; Darts and GluonTS read it too), plus any known-future covariate columns
(NeuralForecast's ``futr_exog``: a price, a promotion, a holiday flag). Series may differ in
length and start; ``ds`` is a date (ISO 8601) or an integer step where there are no dates.
And the M4 competition's wide files, converted to that table (``transduce data m4``).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from transduce.data.calendar import format_dates, infer_frequency
from transduce.data.text import decode_utf8
from transduce.data.timeseries import parse_date, reads_day_first
from transduce.errors import UserError

COLUMNS = ("unique_id", "ds", "y")


@dataclass
class Panel:
    """Series by id, in the file's order of first appearance.

    Attributes:
        ids: the series' ids.
        steps: per series, its ``ds`` values in order (ints, or datetimes if ``dated``).
        values: per series, (T_i,) float32 values.
        dated: whether ``ds`` holds dates.
        known: per known-future covariate column, per series, (T_i,) float32 values.
    """

    ids: list[str]
    steps: list[list]
    values: list[np.ndarray]
    dated: bool
    known: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def index(self, series_id: str) -> int:
        try:
            return self.ids.index(series_id)
        except ValueError:
            raise UserError(
                f"no series {series_id!r}; the ids are {', '.join(self.ids[:5])}"
                f"{', …' if len(self.ids) > 5 else ''}"
            ) from None

    def sliced(self, rows: slice) -> Panel:
        """The panel with the steps ``rows`` of each series (values, steps and covariates
        alike)."""
        return Panel(
            list(self.ids),
            [steps[rows] for steps in self.steps],
            [values[rows] for values in self.values],
            self.dated,
            {c: [v[rows] for v in columns] for c, columns in self.known.items()},
        )

    def fingerprint(self) -> dict:
        return {
            "series": len(self.ids),
            "values": int(sum(len(v) for v in self.values)),
            "sum": round(float(sum(float(v.sum()) for v in self.values)), 3),
        }


def read_panel(
    path: str | Path, text: str | None = None, known: tuple[str, ...] = (), target: bool = True
) -> Panel:
    """The long table at ``path`` (or ``text``, named ``path``): every row an id, a step, a
    value and the ``known`` covariate columns; each series' steps increase. A missing column,
    a column not named, a value that is not a number (or NaN), a step that repeats or goes
    back is an error naming its line. ``target=False`` reads a table of future rows, which
    has no ``y`` (its values are then zeros)."""
    if text is None:
        try:
            text = decode_utf8(Path(path).read_bytes(), str(path))
        except OSError as error:
            raise UserError(f"{path}: cannot read ({error.strerror})") from None
    rows = csv.reader(io.StringIO(text.removeprefix("\ufeff")))  # a byte-order mark
    wanted = [c for c in COLUMNS if target or c != "y"]
    header = _header(path, next(rows, None), wanted, known)
    at = {c: header.index(c) for c in wanted + list(known)}
    body = []  # (line, id, ds, numbers)
    for line, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise UserError(f"{path}:{line}: {len(row)} fields where the header has {len(header)}")
        numbers = [_number(row[at[c]], c, path, line) for c in ["y"][:target] + list(known)]
        body.append((line, row[at["unique_id"]].strip(), row[at["ds"]].strip(), numbers))
    if not body:
        raise UserError(f"{path}: no rows under the header")
    parsed, dated = _steps(path, [(line, ds) for line, _, ds, _ in body])
    steps: dict[str, list] = {}
    lines: dict[str, list[int]] = {}
    values: dict[str, list[list[float]]] = {}
    for (line, sid, ds, numbers), step in zip(body, parsed):
        seen = steps.setdefault(sid, [])
        if seen and step <= seen[-1]:
            raise UserError(
                f"{path}:{line}: series {sid!r} has ds {ds} after "
                f"{step_texts([seen[-1]])[0]}; give each series' rows in increasing ds, once each"
            )
        seen.append(step)
        lines.setdefault(sid, []).append(line)
        values.setdefault(sid, []).append(numbers if target else [0.0] + numbers)
    for sid in steps:  # every step present: a forecast after a gap would be misdated
        _check_spacing(path, sid, steps[sid], lines[sid], dated)
    ids = list(steps)
    table = [np.asarray(values[i], np.float32).reshape(len(steps[i]), 1 + len(known)) for i in ids]
    return Panel(
        ids,
        [steps[i] for i in ids],
        [t[:, 0].copy() for t in table],
        bool(dated),
        {c: [t[:, 1 + k].copy() for t in table] for k, c in enumerate(known)},
    )


def _header(path, header: list[str] | None, wanted: list[str], known: tuple[str, ...]) -> list:
    """The header's names, or a UserError: no header, a column missing, unnamed or unread."""
    if not header:
        raise UserError(
            f"{path}: the file is empty; give a CSV with a header {','.join(wanted + list(known))}"
        )
    header = [h.strip() for h in header]
    missing = [c for c in wanted + list(known) if c not in header]
    if missing:
        raise UserError(
            f"{path}: no column {', '.join(missing)}; a long table has the "
            f"columns {', '.join(wanted + list(known))} (one row per series and "
            "step)"
        )
    if "" in header:
        raise UserError(
            f"{path}: the header's field {header.index('') + 1} is empty; name that column "
            "(and give it as known=NAME) or drop it"
        )
    extra = [h for h in header if h not in COLUMNS and h not in known]
    if extra:
        raise UserError(
            f"{path}: columns {', '.join(extra)} are not read: name them "
            f"known={','.join(extra)} if their future values are known (a price, "
            "a promotion), else drop them"
        )
    return header


def _number(cell: str, column: str, path, line: int) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise UserError(f"{path}:{line}: {column} {cell!r} is not a number") from None
    if not math.isfinite(value) or abs(value) > 3e38:
        raise UserError(
            f"{path}:{line}: {column} {cell!r} is not a finite number a float32 "
            "holds; fill or drop the row"
        )
    return value


def _steps(path, cells: list[tuple[int, str]]) -> tuple[list, bool]:
    """Each ``ds`` (with its line) as an integer step, or as a date where any is not an
    integer (ISO 8601, ``1990/1/1 0:00`` or ``1/31/1990``, day or month first as
    :func:`~transduce.data.timeseries.reads_day_first` decides for the whole table)."""
    steps = []
    for _, ds in cells:
        try:
            steps.append(int(ds))
        except ValueError:
            break
    else:
        if any(abs(s) >= 2**53 for s in steps):
            line, ds = next((line, ds) for (line, ds), s in zip(cells, steps) if abs(s) >= 2**53)
            raise UserError(f"{path}:{line}: ds {ds} is too large a step; number steps from 1")
        return steps, False
    if steps:  # integers first, then a date
        line, ds = cells[len(steps)]
        raise UserError(f"{path}:{line}: ds {ds!r} is a date where earlier rows have steps")
    day_first = reads_day_first(str(path), [ds for _, ds in cells], [line for line, _ in cells])
    dates = []
    for line, ds in cells:
        try:
            date = parse_date(ds, day_first)
        except ValueError:
            if ds.lstrip("-").isdigit():  # the rows before it are dates
                raise UserError(
                    f"{path}:{line}: ds {ds!r} is a step where earlier rows have dates"
                ) from None
            raise UserError(
                f"{path}:{line}: ds {ds!r} is neither an integer step nor a date; write dates "
                "as ISO 8601 (2016-07-01 or 2016-07-01 13:00:00)"
            ) from None
        if dates and (date.tzinfo is None) != (dates[0].tzinfo is None):
            raise UserError(
                f"{path}:{line}: ds {ds!r} {'has no' if date.tzinfo is None else 'has a'} "
                f"time zone, line {cells[0][0]}'s not; give every date a time zone or none"
            )
        dates.append(date)
    return dates, True


def _check_spacing(path, sid: str, steps: list, lines: list[int], dated: bool) -> None:
    """A UserError naming the line where a series' steps do not step evenly (integer steps)
    or by its calendar (dates: hourly to yearly, month starts and ends, business days)."""
    if len(steps) < 2:
        return
    if dated:
        infer_frequency(steps, str(path), lines)  # the line names the series' row
        return
    gap = steps[1] - steps[0]
    for k in range(2, len(steps)):
        if steps[k] - steps[k - 1] != gap:
            raise UserError(
                f"{path}:{lines[k]}: series {sid!r} steps from {steps[k - 1]} to {steps[k]}, "
                f"where it stepped by {gap}; give every step (fill the gap)"
            )


def write_panel(
    path: str | Path,
    ids: list[str],
    steps: list[list],
    values: list,
    columns: dict[str, list] | None = None,
) -> str:
    """The long table's text (and written to ``path`` unless it is None): ``unique_id, ds,
    y`` and, from ``columns`` (name → per series, per step), more columns."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    extra = list(columns or {})
    writer.writerow([*COLUMNS, *extra])
    for s, sid in enumerate(ids):
        for t, (text, value) in enumerate(zip(step_texts(steps[s]), values[s])):
            writer.writerow(
                [
                    sid,
                    text,
                    f"{float(value):.6g}",
                    *(f"{float(columns[c][s][t]):.6g}" for c in extra),
                ]
            )
    return out.getvalue()


def step_texts(steps: list) -> list[str]:
    """Steps as a table writes them: integers as they are, dates at their own resolution
    (``2021-06-01`` for daily and longer steps, with the time where there is one)."""
    if steps and isinstance(steps[0], datetime):
        return format_dates(steps)
    return [str(step) for step in steps]


M4_FREQUENCIES = ("Hourly", "Daily", "Weekly", "Monthly", "Quarterly", "Yearly")


def m4_wide(path: str | Path) -> tuple[list[str], list[np.ndarray]]:
    """The ids and series of one of the M4 competition's wide files (``"V1","V2",…``: the id,
    then the values, quoted, the rest of the row empty). A cell that is not a finite number
    a float32 holds, a row cut short inside a quote, or a file of no series is an error
    naming its line."""
    text = decode_utf8(Path(path).read_bytes(), str(path))
    rows = csv.reader(io.StringIO(text.removeprefix("\ufeff")), strict=True)
    ids, series, line = [], [], 1
    try:
        header = next(rows, None)
        if not header or header[0].strip() != "V1":
            raise UserError(f'{path}: not an M4 file (its header starts "V1","V2",…)')
        for row in rows:
            line = rows.line_num
            if not row:
                continue
            cells = [c for c in row[1:] if c.strip()]
            series.append(
                np.asarray(
                    [_number(c, f"a value of {row[0]}", path, line) for c in cells], np.float32
                )
            )
            ids.append(row[0].strip())
    except csv.Error as error:
        raise UserError(
            f"{path}:{rows.line_num}: {error} (a quote left open?); give the file as the M4 "
            "repository has it"
        ) from None
    if not ids:
        raise UserError(
            f"{path}: a header but no series; give the file as the M4 repository has it"
        )
    return ids, series
