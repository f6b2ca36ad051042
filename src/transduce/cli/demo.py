"""`transduce demo [key=value ...] [--out DIR]`."""

from __future__ import annotations

import argparse
import dataclasses


def add_parser(commands: argparse._SubParsersAction) -> None:
    from transduce.demo import DemoConfig

    keys = ", ".join(f"{f.name}={f.default}" for f in dataclasses.fields(DemoConfig))
    parser = commands.add_parser(
        "demo", help="train an English→German number translator on built-in data (~2 min, CPU)",
        description="Train a small Transformer to translate English number words into German "
                    "ones, report held-out exact match, and draw cross-attention and "
                    "positional-encoding heatmaps.",
        epilog=f"settings (key=value): {keys}")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="change a setting, e.g. steps=500")
    parser.add_argument("--out", default="runs/demo", help="output folder (default: runs/demo)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from transduce.config import apply_overrides
    from transduce.demo import DemoConfig, run_demo
    from transduce.device import PRECISIONS
    from transduce.errors import UserError

    cfg = apply_overrides(DemoConfig(), args.overrides)
    if cfg.precision not in PRECISIONS:
        raise UserError(f"precision must be one of {', '.join(PRECISIONS)}, "
                        f"not {cfg.precision!r}")
    if cfg.steps < 1 or cfg.batch_size < 1 or cfg.held_out < 1:
        raise UserError("steps, batch_size and held_out must be at least 1")
    run_demo(cfg, args.out)
    return 0
