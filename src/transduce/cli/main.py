"""`transduce`: the entry point. User mistakes end in one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import sys

from transduce import __version__
from transduce.cli import average, data, demo, evaluate, export, forecast, train, translate
from transduce.errors import UserError
from transduce.logs import show_warnings

COMMANDS = (demo, data, train, average, translate, evaluate, export, forecast)


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, pointing at --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


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
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    show_warnings()
    try:
        return args.run(args) or 0
    except UserError as error:
        print(f"transduce: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("transduce: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
