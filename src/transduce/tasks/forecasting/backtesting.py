"""`transduce forecast backtest`: one config scored on several stretches of a series that
end before its test split (rolling origins), so that a choice between configs can rest on
more than one validation split.

Fold k (k = 1..K) is the protocol's split moved ``step`` rows earlier k - 1 times: the same
numbers of validation and test rows, every row before them for training, the scaler fitted
on those training rows. Fold 1's test split ends where the protocol's test split begins, so
no fold reads a row of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from transduce import runs
from transduce.data.calendar import format_dates
from transduce.data.windows import split_borders
from transduce.errors import UserError
from transduce.logs import progress
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import load_forecast_data, split_scheme, windowed_borders
from transduce.tasks.forecasting.rundir import evaluate_run
from transduce.tasks.forecasting.task import train_forecaster
from transduce.training.signals import Handlers, Interrupted
from transduce.viz.forecast import plot_backtest

log = logging.getLogger("transduce.backtest")


def fold_borders(
    n_rows: int, scheme: str, folds: int, step: int | None = None
) -> list[tuple[int, int, int]]:
    """The (A, B, C) row borders of each fold's ``split=rows:A,B,C``, latest first.

    Args:
        scheme: the protocol's split (see :func:`~transduce.data.timeseries.split_borders`).
        step: rows between one fold's borders and the next's (default: the length of the
            protocol's validation split).

    Raises:
        UserError: ``folds`` or ``step`` below 1, or so many folds that the earliest would
            train on no row.
    """
    if folds < 1:
        raise UserError(f"--folds must be at least 1, not {folds}")
    if step is not None and step < 1:
        raise UserError(f"--step must be at least 1 row, not {step}")
    borders = split_borders(n_rows, 0, scheme)
    val_start, test_start = borders["val"]
    test_rows = borders["test"][1] - test_start
    step = step or test_start - val_start
    first_train_end = val_start - test_rows  # fold 1's: its splits end test_rows earlier
    if first_train_end < 1:
        raise UserError(
            f"split={scheme} on {n_rows} rows: fold 1's test split ({test_rows} "
            f"rows) ends where the protocol's begins, which leaves it no row to "
            "train on; backtest a longer series"
        )
    fit = (first_train_end - 1) // step + 1
    if folds > fit:
        raise UserError(
            f"--folds {folds} with --step {step}: fold {fit + 1} would have no "
            f"row to train on; at most {fit} fold{'s' * (fit > 1)} fit "
            "(lower --folds or --step)"
        )
    return [
        (first_train_end - k * step, test_start - test_rows - k * step, test_start - k * step)
        for k in range(folds)
    ]


def fold_configs(
    cfg: ForecastConfig, n_rows: int, folds: int, step: int | None = None
) -> list[tuple[tuple[int, int, int], ForecastConfig]]:
    """Each fold's (A, B, C) borders and ``cfg`` with its ``split=rows:A,B,C``, for a
    series of ``n_rows`` rows; every fold is checked (enough rows for a window in each
    split) before any is trained."""
    scheme = split_scheme(cfg)
    out = []
    for k, (a, b, c) in enumerate(fold_borders(n_rows, scheme, folds, step), 1):
        fold = dataclasses.replace(cfg, split=f"rows:{a},{b},{c}")
        try:
            windowed_borders(fold, n_rows)
        except UserError as e:
            raise UserError(
                f"fold {k} (split={fold.split}): {e}; lower --folds or --step, "
                "or shorten input_length/horizon"
            ) from None
        out.append(((a, b, c), fold))
    return out


def run_backtest(
    cfg: ForecastConfig,
    run_dir: str | Path,
    folds: int = 3,
    step: int | None = None,
    report=None,
    jobs: int = 1,
) -> dict:
    """Train ``cfg`` on each fold (RUN_DIR/fold_K, a run of its own that resumes), score its
    best checkpoint on the fold's test split, and write RUN_DIR/backtest.json and a figure
    of where the folds lie, RUN_DIR/backtest.png.

    Returns: the record written: each fold's borders, test dates and scores, and the
    folds' mean test MSE and MAE (and mean ρ-risks for a probabilistic config).
    ``report``: called with a line of text as each fold starts and is scored. ``jobs``:
    folds trained at once, each in a process of its own whose output goes to
    RUN_DIR/fold_K.log; with ``threads`` unset each takes an equal share of the cores.
    """
    # size: the folds planned, trained, scored and plotted, in the order a reader follows
    report = report or (lambda line: None)
    if jobs < 1:
        raise UserError(f"--jobs must be at least 1, not {jobs}")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise UserError(
            "forecast backtest trains its folds in processes of its own; "
            "run it without torchrun, or train each fold under torchrun with "
            "forecast train split=rows:A,B,C"
        )
    run_dir = Path(run_dir)
    if (run_dir / runs.CONFIG).exists():
        raise UserError(
            f"{run_dir} holds a training run; give the backtest a folder of its "
            "own (its folds become runs inside it)"
        )
    cfg.validate("forecast config")
    data = load_forecast_data(cfg)  # a bad file fails here, as in train
    dates = data.series.dates
    configs = fold_configs(cfg, len(dates), folds, step)  # all checked before one trains
    val_mses = _train_folds([fold for _, fold in configs], run_dir, jobs, report)
    records = []
    for k, ((_, b, c), fold) in enumerate(configs, 1):
        fold_dir = runs.fold_dir(run_dir, k)
        test = evaluate_run(fold_dir)
        first, last = format_dates([dates[b], dates[c - 1]], data.series.date_text)
        record = {
            "fold": k,
            "split": fold.split,
            "run_dir": str(fold_dir),
            "test_dates": [first, last],
            "val_mse": val_mses[k - 1],
            "mse": test["mse"],
            "mae": test["mae"],
            "windows": test["windows"],
        }
        for key in ("rho_risk", "coverage"):
            if test.get(key):
                record[key] = test[key]
        records.append(record)
        report(
            f"fold {k}: test rows {b}-{c - 1} ({first} to {last}), {test['windows']} "
            f"windows: validation mse {val_mses[k - 1]:.4f}, test mse {test['mse']:.4f} "
            f"mae {test['mae']:.4f}"
        )
    mean = {key: sum(r[key] for r in records) / len(records) for key in ("mse", "mae")}
    if records[0].get("rho_risk"):
        mean["rho_risk"] = {
            rho: sum(r["rho_risk"][rho] for r in records) / len(records)
            for rho in records[0]["rho_risk"]
        }
    ends = [c for (_, _, c), _ in configs]
    result = {
        "csv": cfg.csv,
        "model": cfg.model.name,
        "horizon": cfg.horizon,
        "input_length": cfg.input_length,
        "step": ends[0] - ends[1] if len(ends) > 1 else step,
        "folds": records,
        "mean": mean,
    }
    plot_backtest(
        dates,
        data.series.values[:, 0],
        data.target_columns[0],
        [(*borders, r["mse"]) for (borders, _), r in zip(configs, records)],
        tuple(data.borders[s][1] for s in ("train", "val", "test")),
        run_dir / runs.BACKTEST_PLOT,
        f"{Path(cfg.csv).name} · {cfg.model.name} · horizon "
        f"{cfg.horizon} · backtest over {len(records)} folds",
        len(data.target_columns),
    )
    runs.write_json(run_dir, runs.BACKTEST, result)
    return result


def _train_folds(configs: list[ForecastConfig], run_dir: Path, jobs: int, report) -> list[float]:
    """Train (or resume) each fold in RUN_DIR/fold_K, ``jobs`` at a time; returns each
    one's best validation MSE."""
    if jobs == 1 or len(configs) == 1:
        out = []
        for k, fold in enumerate(configs, 1):
            report(f"fold {k}/{len(configs)}: split={fold.split}")
            out.append(train_forecaster(fold, runs.fold_dir(run_dir, k))["best_val_mse"])
        return out

    jobs = min(jobs, len(configs))
    cores = os.cpu_count() or 1
    threads = configs[0].engine.threads
    if not threads:  # PyTorch's default, every core, would be taken by each job
        threads = max(1, cores // jobs)
        configs = [
            dataclasses.replace(f, engine=dataclasses.replace(f.engine, threads=threads))
            for f in configs
        ]
    elif threads * jobs > cores:
        log.warning(
            f"transduce: warning: --jobs {jobs} × threads={threads} is more threads than this "
            f"machine's {cores} cores, which slows every job; give threads="
            f"{max(1, cores // jobs)}"
        )
    report(
        f"training {len(configs)} folds, {jobs} at a time ({threads} "
        f"thread{'s' * (threads > 1)} each); their output goes to "
        f"{run_dir / 'fold_K.log'}"
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    stop = context.Value("i", 0)  # the signal that stopped the backtest, once one has
    with (
        ProcessPoolExecutor(
            jobs, mp_context=context, initializer=_start_worker, initargs=(stop,)
        ) as pool,
        _Forward(stop, report),
    ):
        futures = [
            pool.submit(_train_fold, fold, runs.fold_dir(run_dir, k), runs.fold_log(run_dir, k))
            for k, fold in enumerate(configs, 1)
        ]
        try:
            with progress(len(futures), "backtest folds", "fold") as bar:
                for future in as_completed(futures):
                    future.result()  # a fold's error at once, not after the others
                    bar.update(1)
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise


class _Forward(Handlers):
    """While the folds train in processes of their own, a SIGINT or SIGTERM to the command
    is passed on to each of them once: each saves the update in progress and stops, as one
    fold trained alone would, and no further fold starts (``stop``). The workers are in a
    process group of their own (:func:`_start_worker`), so a Ctrl-C at the terminal reaches
    only this process, which passes it on; a second one is passed on too, and stops them at
    once."""

    def __init__(self, stop, report) -> None:
        super().__init__()
        self.stop, self.report = stop, report

    def handle(self, signum, frame) -> None:
        again = bool(self.stop.value)
        self.stop.value = self.stop.value or signum
        for child in multiprocessing.active_children():
            try:
                os.kill(child.pid, signum)
            except ProcessLookupError:
                pass
        if again:
            raise Interrupted(signum)
        self.report(
            f"{signal.Signals(signum).name}: each fold in training saves its "
            "update and stops; the backtest resumes when given again"
        )


_STOP = None  # in a worker process: the signal that stopped the backtest (0: none yet)


def _start_worker(stop) -> None:
    """A fold's process: in a process group of its own (see :class:`_Forward`)."""
    global _STOP
    _STOP = stop
    os.setpgrp()


def _train_fold(fold: ForecastConfig, fold_dir: Path, log: Path) -> float:
    """One fold's training in a process of :func:`_train_folds`, its terminal output to
    ``log``; none once the backtest is stopped."""
    if _STOP is not None and _STOP.value:
        raise Interrupted(_STOP.value)
    with (
        open(log, "a", encoding="utf-8") as out,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(out),
    ):
        return train_forecaster(fold, fold_dir)["best_val_mse"]
