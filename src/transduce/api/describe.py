"""What a loaded model is, for people: its kind, checkpoint (named within its run, never by
an absolute path), sizes, scores and an example input. ``transduce serve`` answers it at
/info and shows it on its page."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
from pathlib import Path

from transduce import families, runs
from transduce.api.loading import family_of
from transduce.api.panel import GlobalForecaster
from transduce.decoding.translator import Translator


def describe(path: str, model) -> dict:
    """What /info says: the task ``family`` and ``kind`` of model, its checkpoint and sizes,
    its scores if known, and an example input for the page. Each family describes its own
    (``describe`` in :mod:`transduce.families`)."""
    family = family_of(path)
    return {"family": family.name, **families.resolve(family.describe)(path, model)}


def describe_forecaster(path: str, model) -> dict:
    """/info of a forecasting run, a global run or a blend."""
    if isinstance(model, GlobalForecaster):
        return {
            "kind": "global",
            "run": Path(model.run_dir).name,
            "description": model.describe(),
            "series": model.ids,
            "scores": runs.scores(model.run_dir),
            "example": model.ids[0],
        }
    return {
        "kind": "forecast",
        "run": Path(model.run_dir).name,
        "description": f"forecaster {model.describe()}",
        "rows_hint": _rows_hint(model),
        "scores": runs.scores(model.run_dir),
        "example": _example_rows(model),
    }


def describe_translator(path: str, model) -> dict:
    """/info of a translation or demo run, an ensemble or a CTranslate2 export."""
    decoding = dataclasses.asdict(model.decoding)
    if not isinstance(model, Translator):
        return {
            "kind": "ctranslate2",
            "export": Path(path).name,
            "description": f"CTranslate2 export {Path(path).name}",
            "scores": {},
            "example": "",
            "decoding": decoding,
            "attention": False,
        }

    params = sum(p.numel() for p in model.model.parameters())
    members = runs.ensemble_members(path)
    if members is not None:
        return {
            "kind": "translation",
            "ensemble": [Path(m).name for m in members],
            "description": f"ensemble of {len(members)} translation models, {params:,} "
            f"parameters in all, {Path(path).name}",
            "parameters": params,
            "scores": {},
            "example": "",
            "decoding": decoding,
            "attention": False,
        }

    checkpoint, run_dir = runs.find_checkpoint(path)
    # named within its run, never by its absolute path: the page may be seen from afar
    checkpoint = (
        (Path(run_dir).name / Path(checkpoint).relative_to(run_dir)).as_posix()
        if Path(checkpoint).is_relative_to(run_dir)
        else Path(checkpoint).name
    )
    numbers = type(model.tokenizer).__name__ == "NumbersTokenizer"
    return {
        "kind": "numbers" if numbers else "translation",
        "checkpoint": checkpoint,
        "description": f"{'demo numbers' if numbers else 'translation'} model, "
        f"{params:,} parameters, {checkpoint}",
        "parameters": params,
        "scores": runs.scores(run_dir),
        "example": "three hundred twenty-one" if numbers else "",
        "decoding": decoding,
        "attention": True,
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
