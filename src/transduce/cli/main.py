"""`transduce`: the entry point. User mistakes end in one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import dataclasses
import os
import signal
import sys
from pathlib import Path

from transduce import __version__
from transduce.cli import (attention, average, data, demo, evaluate, export, figures, forecast,
                           serve, train, translate, tune)
from transduce.errors import UserError
from transduce.logs import show_warnings

COMMANDS = (demo, data, train, average, tune, translate, attention, serve, evaluate, export,
            forecast, figures)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, pointing at --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def positive_float(text: str) -> float:
    """An argparse type: a finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number above 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="transduce",
        description="The Transformer of 'Attention Is All You Need', from scratch in PyTorch.")
    parser.add_argument("--version", action="version", version=f"transduce {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND",
                                     parser_class=OneLineParser)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def add_run_arguments(parser: argparse.ArgumentParser, configs: str, example: str) -> None:
    """``[CONFIG] key=value ... --run-dir DIR``: the arguments of a command that trains."""
    parser.add_argument("items", nargs="*", metavar="[CONFIG] key=value",
                        help=f"a YAML file of settings (see {configs}), then settings to "
                             f"change, e.g. {example}")
    parser.add_argument("--run-dir", required=True,
                        help="where everything of the run lives; an existing one resumes")


def config_and_overrides(cls, items: list[str], run_dir: str | None):
    """A run config from ``[CONFIG.yaml] key=value ...``; with no YAML file, the settings a
    run directory was started with (to resume it) or the defaults. Data paths are made
    absolute so that the run resumes from any working directory.

    Returns: the config and an :class:`~transduce.config.Origin` (for error messages).
    """
    from transduce import runs
    from transduce.config import Origin, apply_overrides, load_config

    path = items[0] if items and "=" not in items[0] else None
    overrides = items[1:] if path else items
    if run_dir is not None and not run_dir.strip():
        raise UserError("--run-dir is empty; name a folder for the run, e.g. --run-dir runs/first")
    started = runs.started_config(run_dir, cls) if run_dir and Path(run_dir).is_dir() else None
    if path is not None:
        cfg, source = load_config(cls, path), path
    elif started is not None:
        cfg, source = started
    else:
        cfg, source = cls(), "defaults"
    cfg = apply_overrides(cfg, overrides)
    paths = {k: os.path.abspath(getattr(cfg, k)) for k in cls.PATH_KEYS if getattr(cfg, k)}
    return dataclasses.replace(cfg, **paths), Origin(source, tuple(overrides))


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # key=value items after an option (train a.yaml --run-dir R max_steps=9)
        if not hasattr(args, "items") or any("=" not in e or e.startswith("-") for e in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.items = args.items + extra
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    show_warnings()
    try:
        code = args.run(args) or 0
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below
        return code
    except UserError as error:
        print(f"transduce: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `transduce translate ... | head -1`: quiet, as Unix tools are
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes at exit
        return 141  # what a shell reports for a process ended by SIGPIPE
    except OSError as error:  # the filesystem refused: read-only, full, a file for a folder
        where = error.filename or "a file"
        print(f"transduce: error: {where}: {error.strerror or error}; check that the path "
              "exists, is the right kind and may be written", file=sys.stderr)
        return 1
    except KeyboardInterrupt as error:  # training's Interrupted has saved the run first
        print("transduce: interrupted", file=sys.stderr)
        return 128 + getattr(error, "signum", signal.SIGINT)


if __name__ == "__main__":
    sys.exit(main())
