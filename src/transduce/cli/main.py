"""`transduce`: the entry point. User mistakes end in one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys

from transduce import families
from transduce.errors import UserError
from transduce.families import Command
from transduce.logs import show_warnings
from transduce.version import __version__

# Each command is a module with add_parser(commands, summary) and run(args): those of the
# task families (transduce.families), then the commands every family shares. Only the module
# of the command given is imported (most import torch, a second or two), so `transduce
# --help` and a typo answer at once.
SHARED = (
    Command("data", "fetch a corpus", "transduce.cli.data"),
    Command(
        "serve",
        "serve a model over HTTP: a JSON API and a web page with attention",
        "transduce.cli.serve",
    ),
    Command(
        "explain",
        "step through a translation in the browser: the beam, every head, the numbers",
        "transduce.cli.explain",
    ),
    Command(
        "figures",
        "draw every figure of the attention study notes from the library",
        "transduce.cli.figures",
    ),
)


# Commands whose work is done, their files written and closed, when they return. After
# them the `transduce` command ends the process at once: Python's own teardown, freeing
# every module torch loaded, took 0.4 s of the 1.7 s a one-sentence `translate` took on
# a Zen 5 (`import torch` alone: 0.93 s, exiting then 1.40 s), and does nothing for them.
QUICK_EXIT = frozenset({"translate"})


def quick_exit(argv: list[str]) -> bool:
    """Whether the process that ran ``argv`` ends without Python's teardown: a command of
    ``QUICK_EXIT``, or any command in a process a launcher started (``WORLD_SIZE`` above 1).
    Such a process has destroyed its process group when its command returns, yet gloo's C++
    threads could still call std::terminate while the interpreter and static objects were
    torn down beside them (SIGABRT, 'terminate called without an active exception', after a
    run had trained and saved; now and then under load, once in CI)."""
    return command_named(argv) in QUICK_EXIT or int(os.environ.get("WORLD_SIZE") or 1) > 1


def commands() -> dict[str, Command]:
    return {**families.commands(), **{c.name: c for c in SHARED}}


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, pointing at --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def command_named(argv: list[str]) -> str | None:
    """The command ``argv`` names: its first word that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with the whole parser of the command ``argv`` names; with no ``argv``,
    of every command (for tests and documentation)."""
    parser = OneLineParser(
        prog="transduce",
        description="The Transformer of 'Attention Is All You Need', from scratch in PyTorch.",
    )
    parser.add_argument("--version", action="version", version=f"transduce {__version__}")
    subparsers = parser.add_subparsers(
        title="commands", metavar="COMMAND", parser_class=OneLineParser
    )
    given = command_named(argv) if argv is not None else None
    for name, command in commands().items():
        if argv is None or name == given:
            importlib.import_module(command.module).add_parser(subparsers, command.summary)
        else:
            subparsers.add_parser(name, help=command.summary)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
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
        print(
            f"transduce: error: {where}: {error.strerror or error}; check that the path "
            "exists, is the right kind and may be written",
            file=sys.stderr,
        )
        return 1
    except KeyboardInterrupt as error:  # training's Interrupted has saved the run first
        print("transduce: interrupted", file=sys.stderr)
        return 128 + getattr(error, "signum", signal.SIGINT)


def entry() -> None:
    """The `transduce` console script: :func:`main`, then the exit status. Where
    :func:`quick_exit` says so, the logs and streams are flushed and the process ends without
    Python's teardown (``os._exit``); otherwise it ends as Python ends."""
    code = main()
    if not quick_exit(sys.argv[1:]):
        sys.exit(code)
    logging.shutdown()  # flushes and closes the run's train.log
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: main has already said what it means
            code = code or 141
    os._exit(code)


if __name__ == "__main__":
    entry()
