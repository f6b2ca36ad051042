"""The forecast family's endpoints: ``POST /forecast`` and ``POST /explain/forecast`` for a
run of one series set (or a blend), where a request gives the rows; ``POST
/forecast/series`` and ``POST /explain/forecast/series`` for a global run, where it names
one of the run's series. :func:`add_routes` is the ``serve`` of their entry in
:mod:`transduce.families`."""

from __future__ import annotations

from functools import partial
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
    """The endpoints of a forecaster (what :func:`transduce.load` gave) on ``app``: those
    of the requests its kind takes (rows, or a series by id)."""
    ROUTES[info["kind"]](app, model, tools)


def series_routes(app: FastAPI, model, tools: Tools) -> None:
    @app.post("/forecast/series")
    async def forecast_series(body: SeriesRequest):
        """A global run's forecast of one series (by its unique_id): its recent history and
        its next horizon, with the quantiles."""
        return await tools.in_worker(model.forecast_one, body.series)

    @app.post("/explain/forecast/series")
    async def explain_series(body: SeriesRequest):
        """What the model attends to when it forecasts one series (by its unique_id) after
        its last step, laid out as ``/explain/forecast`` lays out rows' (see
        ``GlobalForecaster.attention``)."""
        return await tools.in_worker(partial(model.attention, series=body.series))


def rows_routes(app: FastAPI, model, tools: Tools) -> None:
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


# The endpoints by what a forecaster's /info calls its kind (the requests it takes).
ROUTES = {"global": series_routes, "forecast": rows_routes}


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
