"""`transduce train CONFIG.yaml [key=value ...] --run-dir DIR`."""

from __future__ import annotations

import argparse


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "train", help="train a translation model on parallel text (resumes a run directory)",
        description="Train a Transformer on parallel text. Starting again on an existing run "
                    "directory resumes where it stopped.")
    parser.add_argument("config", help="YAML file of settings (see configs/)")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="change a setting")
    parser.add_argument("--run-dir", required=True, help="where everything of the run lives")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from transduce.config import load_config
    from transduce.training.config import TrainConfig
    from transduce.training.trainer import train

    cfg = load_config(TrainConfig, args.config, args.overrides)
    cfg.validate(args.config)
    metrics = train(cfg, args.run_dir)
    if metrics:
        print(" ".join(f"{k} {v}" for k, v in metrics.items()))
    return 0
