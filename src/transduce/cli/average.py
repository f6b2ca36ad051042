"""`transduce average RUN_DIR --last N`."""

from __future__ import annotations

import argparse
import contextlib

from transduce.decoding import defaults
from transduce.runs import average_run, lock


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "average",
        help=summary,
        description="Average the weights of a run's last N checkpoints into RUN_DIR/averaged.pt,"
        " which translate then uses.",
    )
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="the run directory (transduce train --run-dir)"
    )
    parser.add_argument(
        "--last",
        type=int,
        help="how many checkpoints (default: the number transduce tune chose, "
        "in RUN_DIR/decoding.json, else 5)",
    )
    parser.add_argument("--output", help="where to write (default RUN_DIR/averaged.pt)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # averaged.pt inside a run that is training would be stale at once: the run's lock
    # refuses that; --output elsewhere only reads the run, and may average it as it trains
    inside = args.output is None
    with (
        lock(
            args.run_dir,
            "wait for it to finish, or give --output outside the run to "
            "average its checkpoints so far",
        )
        if inside
        else contextlib.nullcontext()
    ):
        last = args.last if args.last is not None else defaults.read(args.run_dir).last or 5
        print(f"wrote {average_run(args.run_dir, last, args.output)}")
    return 0
