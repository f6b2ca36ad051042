"""The forecast family's endpoints: ``POST /forecast`` and ``POST /explain/forecast`` for a
run of one series set (or a blend), ``POST /forecast/series`` for a global run.
:func:`add_routes` is the ``serve`` of their entry in :mod:`transduce.families`."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, StringConstraints

from transduce.data.calendar import format_dates
from transduce.serve.app import Tools

MAX_ROWS_CHARS = 512 * 1024  # characters of a /forecast CSV


class SeriesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    series: Annotated[str, StringConstraints(max_length=200)]


class ForecastRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    csv: Annotated[str, StringConstraints(max_length=MAX_ROWS_CHARS)]


def add_routes(app: FastAPI, model, info: dict, tools: Tools) -> None:
    """The endpoints of a forecaster (what :func:`transduce.load` gave) on ``app``."""
    if info["kind"] == "global":

        @app.post("/forecast/series")
        async def forecast_series(body: SeriesRequest):
            """A global run's forecast of one series (by its unique_id): its recent history and
            its next horizon, with the quantiles."""
            return await tools.in_worker(model.forecast_one, body.series)

        return

    @app.post("/explain/forecast")
    async def explain_forecast(body: ForecastRequest):
        """What the model attends to when it forecasts after the given CSV rows: the last
        layer's weights per head, with the dates of the rows and columns (see
        ``Forecaster.attention``)."""
        series = model.read(body.csv, "the posted rows")
        return await tools.in_worker(model.attention_of, series, "the posted rows")

    @app.post("/forecast")
    async def forecast(body: ForecastRequest):
        """The ``horizon`` rows after the given CSV rows, and the rows the model read."""
        series = model.read(body.csv, "the posted rows")
        rows = await tools.in_worker(model.forecast_series, series, "the posted rows")
        return {
            "date_column": model.cfg.date_column,
            "forecast": rows,
            "history": _history(series, model.cfg),
        }


def _history(series, cfg) -> list[dict]:
    """The last ``input_length`` observed rows of ``series``: what the model read (rows
    after them only give known-future covariates)."""
    observed = ~np.isnan(series.values).any(1)
    dates = [d for d, o in zip(series.dates, observed) if o][-cfg.input_length :]
    values = series.values[observed][-cfg.input_length :]
    return [
        {cfg.date_column: text, **{c: float(v) for c, v in zip(series.columns, row)}}
        for text, row in zip(format_dates(dates, series.date_text), values)
    ]
