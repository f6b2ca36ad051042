"""`transduce forecast backtest`: one config scored on several stretches of its data
(rolling origins), so that a choice between configs can rest on more than one validation
split. The layout says how the data is cut (:mod:`~transduce.tasks.forecasting.folds`): a
wide CSV's folds end before its test split, a long table's at its series' ends; each fold
is a run of its own, trained and scored as any run is.
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
from transduce.errors import UserError
from transduce.families import resolve
from transduce.logs import progress
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import load_forecast_data
from transduce.tasks.forecasting.task import train_forecaster
from transduce.training.signals import Handlers, Interrupted
from transduce.viz.forecast import plot_backtest

log = logging.getLogger("transduce.backtest")


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
    plan = resolve(cfg.layout.BACKTEST)(cfg, data)
    folds_ = plan.plan(folds, step)  # all checked before one trains
    best = _train_folds([fold.cfg for fold in folds_], run_dir, jobs, report)
    metric = cfg.layout.METRIC
    records = []
    for k, (fold, val) in enumerate(zip(folds_, best), 1):
        fold_dir = runs.fold_dir(run_dir, k)
        test = plan.score(fold_dir)
        first, last = plan.dates(fold)
        record = {
            "fold": k,
            "split": fold.setting,
            "run_dir": str(fold_dir),
            "test_dates": [first, last],
            metric: val,
            **{m: test[m] for m in plan.measures},
        }
        for key in ("windows", "series", "rho_risk", "coverage"):
            if test.get(key):
                record[key] = test[key]
        records.append(record)
        scores = " ".join(f"{m} {_shown(test[m])}" for m in plan.measures)
        report(
            f"fold {k}: {fold.label} ({first} to {last}), {plan.size(test)}: validation "
            f"{metric.removeprefix('val_')} {val:.4f}, test {scores}"
        )
    mean = {m: _mean([r[m] for r in records]) for m in plan.measures}
    if records[0].get("rho_risk"):
        mean["rho_risk"] = {
            rho: _mean([r["rho_risk"][rho] for r in records]) for rho in records[0]["rho_risk"]
        }
    ends = [fold.borders[2] for fold in folds_]
    result = {
        "csv": cfg.csv,
        "model": cfg.model.name,
        "horizon": cfg.horizon,
        "input_length": cfg.input_length,
        "step": ends[0] - ends[1] if len(ends) > 1 else step,
        "folds": records,
        "mean": mean,
    }
    steps, values, name, protocol = plan.series()
    measure = plan.measures[0]
    plot_backtest(
        steps,
        values,
        name,
        [(*fold.borders, r[measure]) for fold, r in zip(folds_, records)],
        protocol,
        run_dir / runs.BACKTEST_PLOT,
        f"{Path(cfg.csv).name} · {cfg.model.name} · horizon "
        f"{cfg.horizon} · backtest over {len(records)} folds",
        len(data.target_columns),
        measure,
    )
    runs.write_json(run_dir, runs.BACKTEST, result)
    return result


def _mean(values: list) -> float | None:
    """The mean of the values defined (a fold's MASE is none where no series can scale it)."""
    found = [v for v in values if v is not None]
    return sum(found) / len(found) if found else None


def _shown(value) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _train_folds(configs: list[ForecastConfig], run_dir: Path, jobs: int, report) -> list[float]:
    """Train (or resume) each fold in RUN_DIR/fold_K, ``jobs`` at a time; returns each
    one's best validation measure (the layout's METRIC)."""
    if jobs == 1 or len(configs) == 1:
        out = []
        for k, fold in enumerate(configs, 1):
            report(f"fold {k}/{len(configs)}: split={fold.split}")
            out.append(train_forecaster(fold, runs.fold_dir(run_dir, k))["best"])
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
        return train_forecaster(fold, fold_dir)["best"]
