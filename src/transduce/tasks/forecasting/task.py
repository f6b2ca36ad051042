"""`transduce forecast train`: a forecaster on the windows of a run's data (a wide CSV or a
long table of series: one task for both), as a task of the engine."""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path

import torch
from torch import Tensor
from torch.optim.lr_scheduler import LambdaLR

from transduce.evaluation.quantiles import intervals
from transduce.nn.forecasting.quantiles import pinball
from transduce.tasks.forecasting.calibration import describe
from transduce.tasks.forecasting.config import EXTENDABLE, ForecastConfig, build_forecaster
from transduce.tasks.forecasting.data import ForecastData, load_forecast_data
from transduce.tasks.forecasting.evaluation import evaluate
from transduce.tasks.forecasting.rundir import calibrate_run
from transduce.training.distributed import Session
from transduce.training.schedule import adamw
from transduce.training.train import train_task


class ForecastTask:
    """Shuffled batches of training windows, the summed squared (``point_loss=mse``) or
    absolute (``mae``) error of the point forecast (plus the pinball loss of the quantiles,
    if any, and a top-k router's balance loss; for an ensemble, the mean of the members'
    losses, each on its own forecast), AdamW (its rate decayed per epoch if ``lr_decay``
    < 1), validation MSE/MAE (and, for windows scaled one by one, sMAPE) on the validation
    windows; the layout says which measure chooses the checkpoint (``METRIC``)."""

    kind, higher_is_better, unit = "forecast", False, "values"

    def __init__(self, cfg: ForecastConfig, data: ForecastData, session: Session) -> None:
        self.cfg, self.data, self.session = cfg, data, session
        self.windows = data.windows["train"]
        self.metric = cfg.layout.METRIC

    def build_model(self):
        return build_forecaster(self.cfg, len(self.data.channels))

    def build_optimizer(self, model):
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer = adamw(trainable, self.cfg.lr, self.cfg.weight_decay)
        if self.cfg.lr_decay == 1:
            return optimizer, None
        return optimizer, LambdaLR(
            optimizer,
            epoch_decay(self.updates_per_epoch(), self.cfg.lr_decay, self.cfg.lr_decay_after),
        )

    def updates_per_epoch(self) -> int:
        """Optimiser steps per epoch: the engine groups accumulate × processes batches."""
        per_update = self.cfg.engine.accumulate * self.session.world
        return max(1, math.ceil(len(self.batches(0)) / per_update))

    def batches(self, epoch: int) -> list[Tensor]:
        """Window indices in an order that depends on seed and epoch only."""
        order = torch.Generator().manual_seed(self.cfg.engine.seed * 1000 + epoch)
        return list(torch.randperm(len(self.windows), generator=order).split(self.cfg.batch_size))

    def loss(self, model, batch: Tensor) -> tuple[Tensor, int]:
        x, y, x_time, y_time = (
            torch.stack(t).to(self.session.device)
            for t in zip(*(self.windows[int(i)] for i in batch))
        )
        forecast, _ = model(x, x_time, y_time)  # (B, H, C, 1 + Q); M·B rows for M members
        forecast = forecast.float()
        members = forecast.shape[0] // y.shape[0]
        target = y.repeat(members, *(1,) * (y.dim() - 1))  # each member learns on its own
        error = forecast[..., 0] - target
        loss = error.abs().sum() if self.cfg.point_loss == "mae" else (error**2).sum()
        if self.cfg.quantiles:
            loss = loss + pinball(forecast[..., 1:], target, self.cfg.quantiles)
        # what the model adds (the channel router's balance loss) is a mean: weighed as the
        # error's, summed over values
        auxiliary = model.auxiliary_loss() if hasattr(model, "auxiliary_loss") else None
        if auxiliary is not None:
            loss = loss + auxiliary * y.numel()
        return loss / members, y.numel()  # the members' mean loss, comparable with one

    def validate(self, model) -> dict:
        scores = evaluate(model, self.data, "val")
        found = {"val_mse": round(scores["mse"], 6), "val_mae": round(scores["mae"], 6)}
        if "smape" in scores:
            found["val_smape"] = round(scores["smape"], 4)
        return found

    def record(self) -> dict:
        return {
            "model_config": dataclasses.asdict(self.cfg),
            "data": self.data.fingerprint,
            "extra": {"scaler": self.data.scaler_state()},
        }


def epoch_decay(updates_per_epoch: int, decay: float, after: int):
    """The rate multiplier after k updates: 1 for the first ``after`` epochs, then
    ``decay``**(epoch − after) in each later epoch (epochs counted from 1)."""

    def factor(k: int) -> float:
        epoch = k // updates_per_epoch + 1  # the epoch of update k + 1
        return decay ** max(0, epoch - after)

    return factor


def one_update_warning(cfg: ForecastConfig, windows: int) -> str:
    """The warning for a training split whose windows all fit one update: a short series
    trained with a config made for a long one (batch_size 128 on 120 monthly windows)."""
    smaller = 2 ** int(math.log2(max(1, windows // 8)))  # about 8 updates per epoch
    return (
        f"transduce: warning: {cfg.csv}: its {windows} training windows make a single "
        f"update per epoch (batch_size={cfg.batch_size}); give a smaller batch_size "
        f"(batch_size={smaller} makes {math.ceil(windows / smaller)} batches) or more epochs"
    )


def train_forecaster(cfg: ForecastConfig, run_dir: str | Path) -> dict:
    """Train (or resume) a run of either layout; returns its last validation metrics and
    the best value of the measure that chose it (``best_val_mse``, or ``best_val_mae`` for
    a long table), also under ``best``."""
    cfg.validate("forecast config")
    data = load_forecast_data(cfg)  # bad input fails here, before anything is written

    def make_task(session, log) -> ForecastTask:
        task = ForecastTask(cfg, data, session)
        if task.updates_per_epoch() == 1:
            log.warning(one_update_warning(cfg, len(task.windows)))
        return task

    engine, metrics = train_task(make_task, cfg, run_dir, EXTENDABLE)
    if intervals(list(cfg.quantiles)) and cfg.calibrate and engine.session.is_main:
        logging.getLogger("transduce.train").info(describe(calibrate_run(run_dir, data)))
    return {**metrics, f"best_{cfg.layout.METRIC}": engine.best, "best": engine.best}
