"""`transduce serve`: a JSON API (its OpenAPI schema at /openapi.json) and a web page.

Endpoints: ``GET /`` the page, ``GET /explain`` the explainer's page, ``GET /health``,
``GET /info``, ``POST /translate``, ``POST /attention``, ``POST /explain``, ``POST
/explain/head`` (translation runs), ``POST /forecast``, ``POST /explain/forecast``
(forecasting runs). Errors are
JSON ``{"error": "..."}`` with a 4xx status; the server keeps serving.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from fastapi import Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from starlette.exceptions import HTTPException

from transduce.data.calendar import format_dates
from transduce.decoding.defaults import resolve
from transduce.decoding.sources import MAX_CHARS
from transduce.decoding.translator import MAX_BEAM
from transduce.errors import UserError
from transduce.serve.batcher import Batcher

STATIC = Path(__file__).parent / "static"
MAX_BODY = 1 << 20  # bytes of one request
MAX_SENTENCES = 64  # sentences of one /translate request
MAX_ROWS_CHARS = 512 * 1024  # characters of a /forecast CSV

Sentence = Annotated[str, StringConstraints(max_length=MAX_CHARS)]


class TranslateRequest(BaseModel):
    # strict: true is no beam size, nor 2.0 or "0.6" a number (JSON has types)
    model_config = ConfigDict(extra="forbid", strict=True)
    sentences: list[Sentence] = Field(min_length=1, max_length=MAX_SENTENCES)
    # left out: the model's own decoding (the run's decoding.json, else beam 5 and α 0.6)
    beam: int | None = Field(None, ge=1, le=MAX_BEAM)
    nbest: int = Field(1, ge=1, le=MAX_BEAM)
    lenpen: float | None = Field(None, ge=0, le=5, allow_inf_nan=False)
    no_repeat_ngram: int | None = Field(None, ge=0, le=10)


class AttentionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    sentence: Sentence
    beam: int | None = Field(None, ge=1, le=MAX_BEAM)


class ExplainRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    sentence: Sentence
    beam: int | None = Field(None, ge=1, le=MAX_BEAM)
    lenpen: float | None = Field(None, ge=0, le=5, allow_inf_nan=False)


class HeadRequest(ExplainRequest):
    kind: Literal["encoder", "decoder", "cross"]
    layer: int = Field(ge=0)
    head: int = Field(ge=0)
    query: int = Field(ge=0)


class SeriesRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    series: Annotated[str, StringConstraints(max_length=200)]


class ForecastRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    csv: Annotated[str, StringConstraints(max_length=MAX_ROWS_CHARS)]


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _validation_message(error: RequestValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
    if first.get("type") == "json_invalid":
        return "the body is not valid JSON (UTF-8); send a JSON object"
    return f"{where}: {first.get('msg', 'invalid')}" if where else first.get("msg", "invalid")


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes gets a 413 JSON error, at once
    by its Content-Length, or, sent in chunks without one, as soon as the bytes read pass
    the limit (so no request holds more than that in memory)."""

    def __init__(self, app, limit: int, message: str) -> None:
        self.app, self.limit, self.message = app, limit, message

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            return await _error(413, self.message)(scope, receive, send)
        read = 0

        async def limited():
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            if read > self.limit:  # raised where the route reads its body: a 413 reply
                raise HTTPException(413, self.message)
            return message

        await self.app(scope, limited, send)


def create_app(model, info: dict, window: float = 0.01) -> FastAPI:
    """The app over ``model`` (what :func:`transduce.load` returns); ``info`` is /info's."""
    # size: the routes are closures over one model and batcher, FastAPI's way; each is short
    kind = info["kind"]
    worker = concurrent.futures.ThreadPoolExecutor(1, "transduce-model")
    batcher = Batcher(search=getattr(model, "search", None), window=window, worker=worker)
    forecasting = kind in ("forecast", "global")

    @contextlib.asynccontextmanager
    async def lifespan(app):
        if not forecasting:
            batcher.start()
        yield
        await batcher.stop()
        worker.shutdown(wait=False)

    # The OpenAPI schema is at /openapi.json; FastAPI's /docs pages would fetch their
    # scripts from a CDN, and nothing here may need the network.
    app = FastAPI(
        title="transduce",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Translate, look at attention, or forecast with one trained run.",
    )
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.add_middleware(
        BodyLimit,
        limit=MAX_BODY,
        message=f"request body over {MAX_BODY} "
        f"bytes; send fewer {'rows' if kind == 'forecast' else 'sentences'}",
    )

    @app.exception_handler(RequestValidationError)
    async def invalid(request, error: RequestValidationError):
        if "json" not in request.headers.get("content-type", ""):  # curl -d sends a form
            return _error(
                415,
                "the body must be JSON, sent with Content-Type: "
                "application/json (curl: -H 'Content-Type: application/json')",
            )
        # a body that is not JSON at all is a 400, as when Starlette cannot decode it (bad
        # UTF-8, nesting too deep): one status for one kind of error; JSON of the wrong
        # shape or values is a 422
        unparsed = error.errors()[0].get("type") == "json_invalid"
        return _error(400 if unparsed else 422, _validation_message(error))

    @app.exception_handler(HTTPException)
    async def http_error(request, error: HTTPException):
        if error.status_code == 400:  # Starlette could not parse the body (bad UTF-8, ...)
            return _error(400, "the body is not valid JSON (UTF-8); send a JSON object")
        return _error(error.status_code, str(error.detail))

    @app.exception_handler(UserError)
    async def user_error(request, error: UserError):
        return _error(422, str(error))

    async def in_worker(function, *args):
        return await asyncio.get_running_loop().run_in_executor(worker, function, *args)

    def need(*kinds: str):
        """A route's dependency: FastAPI runs it before it validates the body, so a request
        for another kind of model hears so, whatever its body."""

        def check() -> None:
            if kind not in kinds:
                raise HTTPException(404, f"this server holds a {kind} model; see GET /info")

        return [Depends(check)]

    @app.get("/", include_in_schema=False)
    async def page():
        return FileResponse(STATIC / "index.html")

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    @app.get("/info")
    async def get_info():
        return {
            **info,
            "batches": batcher.batches,
            "batched_requests": batcher.requests,
            "limits": {
                "max_body_bytes": MAX_BODY,
                "max_sentences": MAX_SENTENCES,
                "max_chars": MAX_CHARS,
            },
        }

    @app.post("/translate", dependencies=need("translation", "numbers", "ctranslate2"))
    async def translate(body: TranslateRequest):
        """Translations of ``sentences``, one per sentence, in order (``nbest`` > 1: lists
        of {text, score}, best first), and ``warnings``, a list per sentence of what the
        model could not read of it (unknown words, control characters removed)."""
        d = resolve(model.decoding, body.beam, body.lenpen, body.no_repeat_ngram)
        if body.nbest > d.beam:
            raise HTTPException(422, f"nbest must not exceed beam ({d.beam})")
        lines = [" ".join(s.split()) for s in body.sentences]  # a line break is a space
        found = await batcher.translate(lines, d.beam, body.nbest, d.lenpen, d.no_repeat_ngram)
        if body.nbest == 1:
            out = [hyps[0][0] for hyps in found]
        else:
            out = [[{"text": t, "score": round(s, 4)} for t, s in hyps] for hyps in found]
        # what the model could not read of each sentence: unknown words, control characters
        warnings = model.notes(lines)
        return {"translations": out, "warnings": warnings, "attention": info["attention"]}

    @app.post("/attention", dependencies=need("translation", "numbers"))
    async def attention(body: AttentionRequest):
        """The sentence's tokens and the weights of every layer and head: ``cross``,
        ``encoder`` and ``decoder`` (each [layer][head][query][key])."""
        beam = body.beam or model.decoding.beam
        maps = await in_worker(model.attention, " ".join(body.sentence.split()), beam)
        return maps.to_dict()

    @app.get("/explain", include_in_schema=False)
    async def explain_page():
        return FileResponse(STATIC / "explain.html")

    @app.post("/explain", dependencies=need("translation", "numbers"))
    async def explain(body: ExplainRequest):
        """The sentence's decoding step by step (``steps``: the beam's hypotheses, their
        most probable next tokens and which candidates continue, finish or fall out), the
        ``nbest``, the attention of the translation (as /attention) and the source's
        ``positions`` (sinusoidal table and token embeddings)."""
        d = resolve(model.decoding, body.beam, body.lenpen, None)
        found = await in_worker(model.explain, " ".join(body.sentence.split()), d.beam, d.lenpen)
        return found.to_dict()

    @app.post("/explain/head", dependencies=need("translation", "numbers"))
    async def explain_head(body: HeadRequest):
        """One head opened up for one query token: q, the keys and values, q·k/√d_k (null
        where masked), the softmax and the weighted sum of the values."""
        d = resolve(model.decoding, body.beam, body.lenpen, None)
        numbers = await in_worker(
            model.head,
            " ".join(body.sentence.split()),
            body.kind,
            body.layer,
            body.head,
            body.query,
            d.beam,
            d.lenpen,
        )
        return numbers.to_dict()

    @app.post("/forecast/series", dependencies=need("global"))
    async def forecast_series(body: SeriesRequest):
        """A global run's forecast of one series (by its unique_id): its recent history and
        its next horizon, with the quantiles."""
        return await in_worker(model.forecast, body.series)

    @app.post("/explain/forecast", dependencies=need("forecast"))
    async def explain_forecast(body: ForecastRequest):
        """What the model attends to when it forecasts after the given CSV rows: the last
        layer's weights per head, with the dates of the rows and columns (see
        ``Forecaster.attention``)."""
        series = model.read(body.csv, "the posted rows")
        return await in_worker(model.attention_of, series, "the posted rows")

    @app.post("/forecast", dependencies=need("forecast"))
    async def forecast(body: ForecastRequest):
        """The ``horizon`` rows after the given CSV rows, and the rows the model read."""
        series = model.read(body.csv, "the posted rows")
        rows = await in_worker(model.forecast_series, series, "the posted rows")
        return {
            "date_column": model.cfg.date_column,
            "forecast": rows,
            "history": _history(series, model.cfg),
        }

    return app


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
