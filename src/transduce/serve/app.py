"""`transduce serve`: a JSON API (its OpenAPI schema at /openapi.json) and a web page.

Endpoints: ``GET /`` the page, ``GET /explain`` the explainer's page, ``GET /health``,
``GET /info``, and those of the model's task family (``serve`` in :mod:`transduce.families`:
``serve/translation.py``, ``serve/forecast.py``); another family's endpoint answers 404 and
says which model the server holds. Errors are JSON ``{"error": "..."}`` with a 4xx status;
the server keeps serving.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from transduce import families
from transduce.decoding.sources import MAX_CHARS
from transduce.errors import UserError
from transduce.serve.batcher import Batcher

STATIC = Path(__file__).parent / "static"
MAX_BODY = 1 << 20  # bytes of one request
MAX_SENTENCES = 64  # sentences of one /translate request


@dataclass(frozen=True)
class Tools:
    """What a family's endpoints share with the app: ``in_worker(function, *args)`` runs on
    the one thread that holds the model; ``batcher`` batches concurrent translations."""

    in_worker: Callable
    batcher: Batcher


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
    kind, family = info["kind"], families.named(info["family"])
    worker = concurrent.futures.ThreadPoolExecutor(1, "transduce-model")
    batcher = Batcher(search=getattr(model, "search", None), window=window, worker=worker)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        if batcher.search is not None:  # a translator: its requests are batched
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
        message=f"request body over {MAX_BODY} bytes; send fewer {family.unit}",
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

    @app.get("/explain", include_in_schema=False)
    async def explain_page():
        return FileResponse(STATIC / "explain.html")

    families.resolve(family.serve)(app, model, info, Tools(in_worker, batcher))
    _refuse_other_families(app, kind)
    return app


def _refuse_other_families(app: FastAPI, kind: str) -> None:
    """A 404 that names the model held, at every endpoint of another task family: the route
    takes no body, so the request hears it whatever it sent."""

    async def refuse():
        raise HTTPException(404, f"this server holds a {kind} model; see GET /info")

    served = {getattr(route, "path", None) for route in app.routes}
    for path in sorted({p for f in families.families() for p in f.endpoints} - served):
        app.add_api_route(path, refuse, methods=["POST"], include_in_schema=False)
