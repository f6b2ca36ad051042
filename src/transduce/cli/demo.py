"""`transduce demo [key=value ...] [--output DIR]`."""

from __future__ import annotations

import argparse

from transduce.checks import Origin, raise_problems
from transduce.cli.settings_help import SettingsHelpFormatter, settings_epilog
from transduce.config import apply_overrides
from transduce.io import check_writable
from transduce.tasks.numbers.demo import run_demo
from transduce.tasks.numbers.task import DemoConfig


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "demo",
        help=summary,
        description="Train a small Transformer to translate English number words into German "
        "ones, report held-out exact match, and draw cross-attention and "
        "positional-encoding heatmaps. The output folder is a run directory: "
        "running again resumes it.",
        epilog=settings_epilog(DemoConfig()),
        formatter_class=SettingsHelpFormatter,
    )
    parser.add_argument(
        "items", nargs="*", metavar="key=value", help="change a setting, e.g. max_steps=500"
    )
    parser.add_argument(
        "--output",
        "--out",
        dest="out",
        default="runs/demo",
        help="run directory to write (default: runs/demo)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    cfg = apply_overrides(DemoConfig(), args.items)
    raise_problems(cfg.problems(), Origin("defaults", tuple(args.items)))
    check_writable(args.out, "--output")  # named as this command names it, not --run-dir
    run_demo(cfg, args.out)
    return 0
