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

from transduce.data.text import decode_utf8
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
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    wanted = [c for c in COLUMNS if target or c != "y"]
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
    extra = [h for h in header if h not in COLUMNS and h not in known]
    if extra:
        raise UserError(
            f"{path}: columns {', '.join(extra)} are not read: name them "
            f"known={','.join(extra)} if their future values are known (a price, "
            "a promotion), else drop them"
        )
    at = {c: header.index(c) for c in wanted + list(known)}
    steps: dict[str, list] = {}
    values: dict[str, list[list[float]]] = {}
    dated = None
    for line, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise UserError(f"{path}:{line}: {len(row)} fields where the header has {len(header)}")
        sid, ds = row[at["unique_id"]].strip(), row[at["ds"]].strip()
        step, is_date = _step(ds, path, line)
        if dated is None:
            dated = is_date
        elif dated != is_date:
            raise UserError(
                f"{path}:{line}: ds {ds!r} is {'a date' if is_date else 'a step'}"
                f" where earlier rows have {'dates' if dated else 'steps'}"
            )
        numbers = [_number(row[at[c]], c, path, line) for c in ["y"][:target] + list(known)]
        seen = steps.setdefault(sid, [])
        if seen and step <= seen[-1]:
            raise UserError(
                f"{path}:{line}: series {sid!r} has ds {ds} after "
                f"{seen[-1]}; give each series' rows in increasing ds, once each"
            )
        seen.append(step)
        values.setdefault(sid, []).append(numbers if target else [0.0] + numbers)
    if not steps:
        raise UserError(f"{path}: no rows under the header")
    ids = list(steps)
    table = [np.asarray(values[i], np.float32).reshape(len(steps[i]), 1 + len(known)) for i in ids]
    return Panel(
        ids,
        [steps[i] for i in ids],
        [t[:, 0].copy() for t in table],
        bool(dated),
        {c: [t[:, 1 + k].copy() for t in table] for k, c in enumerate(known)},
    )


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


def _step(ds: str, path, line: int):
    try:
        return int(ds), False
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(ds), True
    except ValueError:
        raise UserError(
            f"{path}:{line}: ds {ds!r} is neither an integer step nor an ISO 8601 date"
        ) from None


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
        for t, (step, value) in enumerate(zip(steps[s], values[s])):
            text = step.isoformat(sep=" ") if isinstance(step, datetime) else str(step)
            writer.writerow(
                [
                    sid,
                    text,
                    f"{float(value):.6g}",
                    *(f"{float(columns[c][s][t]):.6g}" for c in extra),
                ]
            )
    return out.getvalue()


def m4_wide(path: str | Path) -> tuple[list[str], list[np.ndarray]]:
    """The ids and series of one of the M4 competition's wide files (``"V1","V2",…``: the id,
    then the values, quoted, the rest of the row empty)."""
    text = decode_utf8(Path(path).read_bytes(), str(path))
    rows = csv.reader(io.StringIO(text))
    header = next(rows, None)
    if not header or header[0].strip() != "V1":
        raise UserError(f'{path}: not an M4 file (its header starts "V1","V2",…)')
    ids, series = [], []
    for line, row in enumerate(rows, start=2):
        if not row:
            continue
        cells = [c for c in row[1:] if c.strip()]
        try:
            series.append(np.asarray([float(c) for c in cells], np.float32))
        except ValueError:
            raise UserError(f"{path}:{line}: a value of {row[0]} is not a number") from None
        ids.append(row[0].strip())
    return ids, series
