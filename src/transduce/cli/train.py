"""`transduce train [CONFIG.yaml] [key=value ...] --run-dir DIR`."""

from __future__ import annotations

import argparse

from transduce.cli.args import add_run_arguments, config_and_overrides
from transduce.cli.settings_help import SettingsHelpFormatter, settings_epilog
from transduce.tasks.translation.config import TrainConfig
from transduce.tasks.translation.task import train


def add_parser(commands: argparse._SubParsersAction, summary: str) -> None:
    parser = commands.add_parser(
        "train",
        help=summary,
        description="Train a Transformer on parallel text. Starting again on an existing run "
        "directory resumes where it stopped; with no CONFIG it resumes with the "
        "run's own config.yaml. Under torchrun it trains on every process.",
        epilog=settings_epilog(TrainConfig()),
        formatter_class=SettingsHelpFormatter,
    )
    add_run_arguments(parser, "configs/", "max_steps=500")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    cfg, source = config_and_overrides(TrainConfig, args.items, args.run_dir)
    cfg.validate(source)
    metrics = train(cfg, args.run_dir)
    if metrics:
        print(" ".join(f"{k} {v}" for k, v in metrics.items()))
    return 0
