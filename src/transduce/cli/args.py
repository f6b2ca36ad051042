"""What the commands' parsers share: number types, and the arguments and
config of a command that trains a run."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

from transduce import runs
from transduce.checks import Origin
from transduce.config import apply_overrides
from transduce.config_files import load_config
from transduce.errors import UserError


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


def add_run_arguments(parser: argparse.ArgumentParser, configs: str, example: str) -> None:
    """``[CONFIG] key=value ... --run-dir DIR``: the arguments of a command that trains."""
    parser.add_argument(
        "items",
        nargs="*",
        metavar="[CONFIG] key=value",
        help=f"a YAML file of settings (see {configs}), then settings to change, e.g. {example}",
    )
    parser.add_argument(
        "--run-dir",
        required=True,
        help="where everything of the run lives; an existing one resumes",
    )


def config_and_overrides(cls, items: list[str], run_dir: str | None):
    """A run config from ``[CONFIG.yaml] key=value ...``; with no YAML file, the settings a
    run directory was started with (to resume it) or the defaults. Data paths are made
    absolute so that the run resumes from any working directory.

    Returns: the config and an :class:`~transduce.config.Origin` (for error messages).
    """
    path = items[0] if items and "=" not in items[0] else None
    overrides = items[1:] if path else items
    if run_dir is not None and not run_dir.strip():
        raise UserError("--run-dir is empty; name a folder for the run, e.g. --run-dir runs/first")
    started = runs.started_config(run_dir, cls) if run_dir and Path(run_dir).is_dir() else None
    if path is not None:  # the model the command line chooses is the one the file is read for
        cfg, source = load_config(cls, path, overrides), path
    elif started is not None:
        cfg, source = apply_overrides(started[0], overrides), started[1]
    else:
        cfg, source = apply_overrides(cls(), overrides), "defaults"
    paths = {k: os.path.abspath(getattr(cfg, k)) for k in cls.PATH_KEYS if getattr(cfg, k)}
    return dataclasses.replace(cfg, **paths), Origin(source, tuple(overrides))
