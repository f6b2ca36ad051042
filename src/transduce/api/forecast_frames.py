"""What a user hands the forecasting API: a CSV path or a pandas DataFrame (saved as
RUN/series.csv, and removed again if the start fails), the settings of a run made from it,
and a backtest of them; and a forecast written back as CSV text."""

from __future__ import annotations

import contextlib
import re
import shutil
from pathlib import Path

from transduce.config import apply_mapping
from transduce.config_files import load_config
from transduce.errors import UserError
from transduce.io import write_text
from transduce.tasks.forecasting.backtesting import run_backtest
from transduce.tasks.forecasting.config import ForecastConfig

SERIES = "series.csv"  # a DataFrame given to fit or backtest, as the run reads it


def _name(data) -> str:
    """What an error calls ``data``: the file's path, or "<DataFrame>"."""
    return "<DataFrame>" if hasattr(data, "to_csv") else str(data)


def _in_frame(error: UserError, name: str) -> UserError:
    """An error about a DataFrame's CSV text (``name:LINE: ...``) as one about the frame:
    ``<DataFrame> row N: ...``, N its position (iloc), the header being line 1."""
    text = str(error)
    found = re.match(re.escape(name) + r":(\d+): ", text)
    if found:
        return UserError(f"<DataFrame> row {int(found.group(1)) - 2}: {text[found.end() :]}")
    return UserError(text.replace(name, "<DataFrame>", 1))


def _frame_text(frame, date_column: str = "date") -> str:
    """CSV text of a pandas DataFrame. Its index is written when named (the date), or as
    ``date_column`` when it holds dates (an unnamed DatetimeIndex, as ``pd.date_range``
    makes); a plain index of row numbers is left out."""
    index = frame.index
    if getattr(index, "name", None) is not None:
        return frame.to_csv(index=True)
    if getattr(getattr(index, "dtype", None), "kind", "") == "M":
        return frame.to_csv(index=True, index_label=date_column)
    return frame.to_csv(index=False)


def settings_for(data, run_dir: str | Path, config: str | Path | None, settings: dict):
    """The config of :meth:`Forecaster.fit` and :func:`backtest`: ``config``'s settings (or
    the defaults), then ``settings``, reading ``data`` (a CSV path, or a DataFrame, saved as
    RUN_DIR/series.csv)."""
    run_dir = Path(run_dir)
    frame = hasattr(data, "to_csv")
    csv_path = run_dir / SERIES if frame else Path(data)
    cfg = load_config(ForecastConfig, config, chosen=settings)
    cfg = apply_mapping(cfg, {**settings, "csv": str(csv_path.resolve())}, "settings", strict=True)
    if frame:  # once the settings are known good
        text = _frame_text(data, cfg.date_column)
        run_dir.mkdir(parents=True, exist_ok=True)
        write_text(csv_path, text)
    return cfg


@contextlib.contextmanager
def _frame_kept_only_if_used(data, run_dir: str | Path):
    """A DataFrame is saved as RUN_DIR/series.csv before training reads it; if the start
    fails (bad values, a file too short), that file and a folder made for it go again, as a
    failed start from a CSV path leaves nothing behind."""
    run_dir = Path(run_dir)
    fresh = hasattr(data, "to_csv") and not run_dir.exists()
    try:
        yield
    except BaseException as error:
        if fresh and run_dir.is_dir() and {p.name for p in run_dir.iterdir()} <= {SERIES}:
            shutil.rmtree(run_dir)
            if isinstance(error, UserError):  # name what the user gave, not a file now gone
                raise _in_frame(error, str((run_dir / SERIES).resolve())) from None
        raise


def backtest(
    data,
    run_dir: str | Path,
    config: str | Path | None = None,
    folds: int = 3,
    step: int | None = None,
    **settings,
) -> dict:
    """Score a config on ``folds`` stretches of ``data`` before its test split, as
    ``forecast backtest`` does (see :mod:`transduce.tasks.forecasting.backtesting`); returns what
    it writes to RUN_DIR/backtest.json. ``config`` and ``settings`` as for
    :meth:`Forecaster.fit`; calling it again on the same ``run_dir`` resumes the folds."""
    with _frame_kept_only_if_used(data, run_dir):
        return run_backtest(settings_for(data, run_dir, config, settings), run_dir, folds, step)
