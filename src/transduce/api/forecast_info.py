"""What the server's /info says of a forecaster: its kind, description, scores and an
example request for the page, for a run of one CSV and for a global run."""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path

from transduce import runs


def wide_info(model) -> dict:
    """/info of a run of one CSV, or a blend of such runs."""
    return {
        "kind": "forecast",
        "run": Path(model.run_dir).name,
        "description": f"forecaster {model.describe()}",
        "rows_hint": _rows_hint(model),
        "scores": runs.scores(model.run_dir),
        "example": _example_rows(model),
    }


def global_info(model) -> dict:
    """/info of a global run: its series, the first of them the page's example."""
    return {
        "kind": "global",
        "run": Path(model.run_dir).name,
        "description": model.describe(),
        "series": model.ids,
        "scores": runs.scores(model.run_dir),
        "example": model.ids[0],
    }


def _rows_hint(forecaster) -> str:
    """What the page asks for: the rows a request must hold."""
    cfg = forecaster.cfg
    hint = (
        f"Paste at least {cfg.input_length} recent rows as CSV (a header with the "
        f"{cfg.date_column} column and {', '.join(forecaster.columns)})"
    )
    if not forecaster.known:
        return hint + "."
    known = ", ".join(cfg.known_list())
    return (
        hint + f", then the {cfg.horizon} rows to forecast: their {cfg.date_column} and "
        f"{known}, known ahead, with the other columns left blank."
    )


def _example_rows(forecaster) -> str:
    """Rows of the run's own CSV for the page to start from, in the date column and the
    columns the model reads (those the hint names): the last input_length; with
    known-future covariates, the last input_length + horizon, the last horizon of them with
    only the known columns filled in (the future's rows, as a request must give them)."""
    with contextlib.suppress(Exception):
        cfg = forecaster.cfg
        rows = list(csv.reader(io.StringIO(Path(cfg.csv).read_text(encoding="utf-8"))))
        read = [rows[0].index(c) for c in (cfg.date_column, *forecaster.columns)]
        header, body = [rows[0][i] for i in read], [[r[i] for i in read] for r in rows[1:] if r]
        if forecaster.known:
            # forecast columns and past-observed inputs: blank where the future begins
            blank = set(range(1, 1 + forecaster.inputs))
            body = body[-(cfg.input_length + cfg.horizon) :]
            body[cfg.input_length :] = [
                ["" if i in blank else v for i, v in enumerate(r)] for r in body[cfg.input_length :]
            ]
        else:
            body = body[-cfg.input_length :]
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows([header, *body])
        return out.getvalue()
    return ""
