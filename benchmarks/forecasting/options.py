"""The forecasting benchmark's command line (run.py)."""

from __future__ import annotations

import argparse
from pathlib import Path


def command_line(description: str, runs: Path, root: Path, here: Path) -> argparse.ArgumentParser:
    """run.py's options: ``runs`` the default folder of run directories (shown relative to
    ``root``), ``here`` the default folder of the results."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--data", required=True, type=Path, help="folder with the CSV files")
    parser.add_argument(
        "--minutes",
        type=float,
        default=2.5,
        help="training-time cap per (dataset, horizon, model) run",
    )
    parser.add_argument("--datasets", help="default: every dataset (of the plan)")
    parser.add_argument("--models", help="default: every model (of the plan)")
    parser.add_argument(
        "--horizons",
        type=lambda text: [int(n) for n in text.split(",")],
        help="only these horizons (default: the dataset's four)",
    )
    parser.add_argument(
        "--input-lengths",
        type=lambda text: [int(n) for n in text.split(",")],
        help="train each run with each of these input lengths and keep the "
        "one of lowest validation MSE (default: the config's)",
    )
    parser.add_argument(
        "--members",
        type=lambda text: [int(n) for n in text.split(",")],
        help="patch, transformer and channel: train each run as an ensemble "
        "of each of these sizes (members=N, N times the minutes) and keep "
        "the one of lowest validation MSE (default: the config's)",
    )
    parser.add_argument(
        "--plan",
        type=Path,
        help="YAML of minutes, members and input_length per dataset and model "
        "(replaces --minutes, --members and --input-lengths), e.g. "
        "benchmarks/forecasting/plan.yaml",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="rows trained at a time, each in its own process with "
        "cores / jobs threads (default 1)",
    )
    parser.add_argument(
        "--runs",
        type=Path,
        default=runs,
        help=f"folder of the run directories (default {runs.relative_to(root)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=here,
        help="folder of results.json and results.md (default: this script's)",
    )
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="train nothing: calibrate the quantiles of, and score again, the "
        "runs behind the saved rows of these datasets, models and "
        "horizons (their training figures stay)",
    )
    parser.add_argument(
        "--render", action="store_true", help="only rewrite results.md from results.json"
    )
    parser.add_argument("overrides", nargs="*", help="config key=value for every run")
    return parser
