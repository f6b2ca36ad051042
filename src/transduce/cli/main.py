"""`transduce`: the entry point. User mistakes end in one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from transduce.version import __version__
from transduce.cli import (attention, average, data, demo, evaluate, export, figures, forecast,
                           serve, train, translate, tune)
from transduce.cli.args import OneLineParser
from transduce.errors import UserError
from transduce.logs import show_warnings

COMMANDS = (demo, data, train, average, tune, translate, attention, serve, evaluate, export,
            forecast, figures)


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
