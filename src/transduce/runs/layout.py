"""The name of every file a run directory holds; nothing outside ``transduce.runs`` spells
one. Each is written atomically (``transduce.io``) and read through this package.

::

    RUN/
      config.yaml          the resolved settings (``train --run-dir RUN`` resumes from them)
      .lock                held by the one process writing the run
      spm.model            (translation) the tokenizer its checkpoints are tied to
      checkpoints/         step_N.pt, best.pt; averaged.pt after tune or average
      train.log, metrics.jsonl, tensorboard/
      decoding.json        (translation) the decoding tune chose; tune.partial.jsonl meanwhile
      ensemble.json        (an ensemble folder) its member runs
      translations.tsv, cross_attention.png, positional_encoding.png   (the demo)
      test_results.json    the test split's scores
      calibration.json     (forecasting) the quantile shifts fitted on validation
      backtest.json, backtest.png, fold_K/, fold_K.log   (forecasting) a backtest
      blend.json           (a blend folder) its runs and their weights
      forecast_WINDOW.png  (forecasting) a plotted forecast
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from transduce.io import write_text

CONFIG, LOCK, TOKENIZER = "config.yaml", ".lock", "spm.model"
CHECKPOINTS, BEST, AVERAGED = "checkpoints", "best.pt", "averaged.pt"
TRAIN_LOG, METRICS, TENSORBOARD = "train.log", "metrics.jsonl", "tensorboard"
DECODING, TUNE_PARTIAL, ENSEMBLE = "decoding.json", "tune.partial.jsonl", "ensemble.json"
TRANSLATIONS = "translations.tsv"
CROSS_ATTENTION_PLOT, POSITIONS_PLOT = "cross_attention.png", "positional_encoding.png"
TEST_RESULTS, CALIBRATION = "test_results.json", "calibration.json"
BACKTEST, BACKTEST_PLOT, BLEND = "backtest.json", "backtest.png", "blend.json"


def fold_dir(run_dir: str | os.PathLike, k: int) -> Path:
    """Where fold ``k`` (from 1) of a backtest trains."""
    return Path(run_dir) / f"fold_{k}"


def fold_log(run_dir: str | os.PathLike, k: int) -> Path:
    """The terminal output of fold ``k`` when folds train in parallel processes."""
    return Path(run_dir) / f"fold_{k}.log"


def forecast_plot(run_dir: str | os.PathLike, window: str) -> Path:
    """The default file of a forecast plot: ``window`` is "future", "last" or a number."""
    return Path(run_dir) / f"forecast_{window}.png"


def series_plot(run_dir: str | os.PathLike, series: str) -> Path:
    """The default file of a global run's plot of one series: its id made a file name (every
    character but letters, digits, ``.``, ``-`` and ``_`` becomes ``_``, so no id reaches
    outside the run directory), at most 100 characters of it."""
    name = re.sub(r"[^\w.-]", "_", series, flags=re.ASCII)[:100]
    return Path(run_dir) / f"forecast_{name}.png"


def write_json(run_dir: str | os.PathLike, name: str, record, indent: int = 2) -> Path:
    """Write ``record`` to RUN/``name`` atomically; returns its path. A non-finite number is
    a ValueError: JSON has none, and strict readers (browsers, serve's answers) refuse the
    NaN and Infinity tokens Python would write; a score without a value is None."""
    path = Path(run_dir) / name
    write_text(path, json.dumps(record, indent=indent, allow_nan=False) + "\n")
    return path
