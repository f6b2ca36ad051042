"""`transduce serve RUN [--host 127.0.0.1] [--port 8000]`."""

from __future__ import annotations

import argparse
import socket

import torch
import uvicorn

from transduce.api.describe import describe
from transduce.api.loading import load
from transduce.cli.args import positive_float, positive_int
from transduce.device import DECODING_PRECISIONS
from transduce.errors import UserError
from transduce.serve.app import create_app
from transduce.serve.http import READ_TIMEOUT, with_read_timeout


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "serve",
        help=summary,
        description="Serve a translation, demo or forecasting run (or a CTranslate2 export): "
        "a web page at /, the explainer at /explain, a JSON API (POST /translate, "
        "/attention, /explain, /explain/head, /forecast; GET /health, /info) "
        "described by /openapi.json. Concurrent requests are batched together.",
    )
    add_options(parser)
    parser.set_defaults(run=run, page="/")


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options of `serve` (and of `explain`, which serves the same app)."""
    parser.add_argument(
        "model",
        metavar="RUN_DIR|CHECKPOINT|EXPORT",
        help="a translation run directory, a checkpoint file, an ensemble "
        "directory (transduce tune RUN RUN … --output; no attention), or a "
        "folder `transduce export` wrote",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port (default 8000; 0: a free one, printed at start)",
    )
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (default: all)")
    parser.add_argument("--device", default="auto", help="auto, cpu, mps, cuda or cuda:N")
    parser.add_argument(
        "--precision",
        default="auto",
        choices=list(DECODING_PRECISIONS),
        help="a translator's: auto (bf16 where the hardware is fast at it), bf16, fp32 or "
        "int8 (CPU; see the serving guide for which answers one sentence fastest); other "
        "models run in float32",
    )
    parser.add_argument(
        "--known",
        metavar="FILE",
        help="a global forecasting run that reads known covariates: a long "
        "table of unique_id, ds and those columns at each series' next "
        "horizon steps",
    )
    parser.add_argument(
        "--window-ms",
        type=positive_int,
        default=10,
        help="how long a request waits for others to batch with (default 10)",
    )
    parser.add_argument(
        "--read-timeout",
        type=positive_float,
        default=READ_TIMEOUT,
        metavar="SECONDS",
        help="how long a client may take to send a whole request, headers and "
        f"body (default {READ_TIMEOUT:g}); a slower one gets 408 and is "
        "disconnected",
    )


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UserError(f"--port must be between 0 and 65535, not {args.port}")
    if args.threads < 0:
        raise UserError(f"--threads must be 0 (all cores) or more, not {args.threads}")
    if args.threads:
        torch.set_num_threads(args.threads)
    sock = _listen(args.host, args.port)  # before the model loads: a taken port fails fast
    model = load(args.model, args.device, args.precision)  # an export refuses a precision
    if args.known:
        if not hasattr(model, "read_known"):  # a translator
            raise UserError(
                f"--known is for a global forecasting run (layout=long); {args.model} is not one"
            )
        model.read_known(args.known)
    app = create_app(model, describe(args.model, model), args.window_ms / 1000)
    host, port = sock.getsockname()[:2]  # --port 0: the one the system chose
    host = f"[{host}]" if ":" in host else host
    print(
        f"transduce: serving {args.model} on http://{host}:{port}{args.page} (Ctrl-C stops)",
        flush=True,
    )
    config = uvicorn.Config(app, log_level="warning", http=with_read_timeout(args.read_timeout))
    uvicorn.Server(config).run(sockets=[sock])
    return 0


def _listen(host: str, port: int):
    """A listening socket on ``host``:``port``, or a UserError that says why not (a port in
    use, a name that does not resolve) in one line; uvicorn would log it and exit 3."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as error:
        raise UserError(
            f"--host {host}: {error.strerror or error}; give a name or address "
            "of this machine (default 127.0.0.1)"
        ) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restarts at once
        sock.bind(address)
        sock.listen(2048)  # uvicorn's backlog
        return sock
    except OSError as error:
        sock.close()
        raise UserError(
            f"--host {host} --port {port}: {error.strerror or error}; give "
            "another --port (0: any free one) or --host"
        ) from None
