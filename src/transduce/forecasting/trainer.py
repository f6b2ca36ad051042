"""`transduce forecast train` and `test`: MSE training with early stopping, resumable.

A run directory holds config.yaml, checkpoints/last.pt (after every epoch) and best.pt
(lowest validation MSE), train.log and metrics.jsonl; `test` adds test_results.json.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import torch

from transduce.data.timeseries import Scaler
from transduce.errors import UserError
from transduce.forecasting.config import EXTENDABLE, ForecastConfig, build_forecaster
from transduce.forecasting.data import ForecastData, load_forecast_data
from transduce.io import write_text
from transduce.logs import progress, setup_logging
from transduce.training.checkpoint import load_checkpoint, save_checkpoint
from transduce.training.trainer import prepare_run_dir

PROGRESS = ("epoch", "best_val", "bad_epochs", "elapsed")


def scaler_state(data: ForecastData) -> dict:
    return {"mean": torch.from_numpy(data.scaler.mean), "std": torch.from_numpy(data.scaler.std),
            "columns": data.series.columns}


@torch.no_grad()
def evaluate(model, data: ForecastData, split: str, batch_size: int = 256,
             drop_last: tuple[int, ...] = ()) -> dict:
    """MSE and MAE on the normalised scale, averaged over windows × horizon × channels.

    ``drop_last``: also score, for each batch size B given, only the first ⌊n / B⌋ · B
    windows, as the reference implementations' test loaders do (``drop_last=True``); their
    published figures leave out the last incomplete batch. Under ``"drop_last"`` → B.
    """
    model.eval()
    squared, absolute = [], []  # per window, summed over horizon × channels
    for x, y, x_time, y_time in data.loader(split, batch_size):
        forecast, _ = model(x, x_time, y_time)
        error = (forecast - y).double().flatten(1)  # (B, H·C)
        squared.append((error**2).sum(1))
        absolute.append(error.abs().sum(1))
    squared, absolute = torch.cat(squared), torch.cat(absolute)
    per_window = data.windows[split][0][1].numel()  # H · C values

    def scores(n: int) -> dict:
        count = n * per_window
        return {"mse": float(squared[:n].sum()) / count, "mae": float(absolute[:n].sum()) / count,
                "windows": n}
    result = scores(len(squared))
    if drop_last:
        result["drop_last"] = {b: scores(len(squared) // b * b) for b in drop_last
                               if len(squared) >= b}
    return result


def train_forecaster(cfg: ForecastConfig, run_dir: str | Path) -> dict:
    """Train (or resume) a run; returns the best validation metrics."""
    cfg.validate("config")
    run_dir = Path(run_dir)
    data = load_forecast_data(cfg)  # bad input fails here, before anything is written
    run_dir.mkdir(parents=True, exist_ok=True)
    prepare_run_dir(cfg, run_dir, EXTENDABLE)
    log = setup_logging(run_dir, "train")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    model = build_forecaster(cfg, len(data.series.columns))
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = (torch.optim.AdamW(trainable, lr=cfg.lr, weight_decay=cfg.weight_decay)
                 if trainable else None)
    state = {"epoch": 0, "best_val": float("inf"), "bad_epochs": 0, "elapsed": 0.0}
    last = run_dir / "checkpoints" / "last.pt"
    if last.exists():
        saved = load_checkpoint(last)
        model.load_state_dict(saved["model"])
        if optimizer is not None:
            optimizer.load_state_dict(saved["optimizer"])
        torch.set_rng_state(saved["rng"])
        state.update({k: saved[k] for k in PROGRESS})
        log.info(f"resuming after epoch {state['epoch']}")
    log.info(f"{cfg.model}: {sum(p.numel() for p in trainable):,} parameters; "
             f"{len(data.windows['train']):,} train / {len(data.windows['val']):,} val / "
             f"{len(data.windows['test']):,} test windows; {torch.get_num_threads()} threads")

    def save(path: Path) -> None:
        save_checkpoint(path, {
            "model": model.state_dict(), "model_config": dataclasses.asdict(cfg),
            "optimizer": optimizer.state_dict() if optimizer is not None else {},
            "rng": torch.get_rng_state(), "scaler": scaler_state(data), **state})

    if optimizer is None:  # nothing to learn (repeat-last-value)
        metrics = evaluate(model, data, "val")
        state["best_val"] = metrics["mse"]
        save(run_dir / "checkpoints" / "best.pt")
        save(last)
        return metrics
    while (reason := _stop_reason(cfg, state)) is None:
        start = time.perf_counter()
        loss = _epoch(model, optimizer, data, cfg, state["epoch"])
        state["elapsed"] += time.perf_counter() - start
        metrics = evaluate(model, data, "val")
        state["epoch"] += 1
        improved = metrics["mse"] < state["best_val"]
        state["best_val"] = min(state["best_val"], metrics["mse"])
        state["bad_epochs"] = 0 if improved else state["bad_epochs"] + 1
        if improved:
            save(run_dir / "checkpoints" / "best.pt")
        save(last)
        record = {"epoch": state["epoch"], "train_mse": round(loss, 5),
                  "val_mse": round(metrics["mse"], 5), "val_mae": round(metrics["mae"], 5),
                  "elapsed_s": round(state["elapsed"], 1)}
        with open(run_dir / "metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        log.info(" ".join(f"{k} {v}" for k, v in record.items()))
    log.info(f"stopped after epoch {state['epoch']}: {reason}; best val_mse "
             f"{state['best_val']:.5f}")
    return {"mse": state["best_val"]}


def _stop_reason(cfg: ForecastConfig, state: dict) -> str | None:
    if state["epoch"] >= cfg.max_epochs:
        return f"reached max_epochs={cfg.max_epochs}"
    if cfg.max_minutes and state["elapsed"] >= 60 * cfg.max_minutes:
        return f"reached max_minutes={cfg.max_minutes}"
    if cfg.patience and state["bad_epochs"] >= cfg.patience:
        return f"no validation gain in {cfg.patience} epochs (patience)"
    return None


def _epoch(model, optimizer, data: ForecastData, cfg: ForecastConfig, epoch: int) -> float:
    """One pass over the shuffled training windows (the order depends on seed and epoch
    only, so a resumed run sees the same batches); returns the mean training MSE."""
    model.train()
    order = torch.Generator().manual_seed(cfg.seed * 1000 + epoch)
    loader = data.loader("train", cfg.batch_size, shuffle=True, generator=order)
    total, batches = 0.0, 0
    with progress(len(loader), f"epoch {epoch + 1}", "batch") as bar:
        for x, y, x_time, y_time in loader:
            forecast, _ = model(x, x_time, y_time)
            loss = torch.nn.functional.mse_loss(forecast, y)
            if not torch.isfinite(loss):
                raise UserError(f"training loss became {float(loss)} in epoch {epoch + 1}; "
                                "lower lr and start a new --run-dir")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
            bar.update(1)
            bar.set_postfix(mse=f"{total / batches:.4f}", refresh=False)
    return total / max(batches, 1)


def load_model(run_dir: str | Path, checkpoint: str = "best.pt"):
    """The config, model (eval mode) and training-row scaler of a trained run."""
    path = Path(run_dir) / "checkpoints" / checkpoint
    state = load_checkpoint(path)
    fields = {f.name for f in dataclasses.fields(ForecastConfig)}
    if set(state["model_config"]) != fields or "scaler" not in state:
        raise UserError(f"{path}: not a forecasting checkpoint; give a run directory of "
                        "transduce forecast train")
    cfg = ForecastConfig(**state["model_config"])
    model = build_forecaster(cfg, len(state["scaler"]["columns"]))
    model.load_state_dict(state["model"])
    scaler = Scaler(state["scaler"]["mean"].numpy(), state["scaler"]["std"].numpy())
    return cfg, model.eval(), scaler, state["scaler"]["columns"]


def load_run(run_dir: str | Path):
    """:func:`load_model` plus the run's data, checked to be what it was trained on."""
    cfg, model, scaler, columns = load_model(run_dir)
    data = load_forecast_data(cfg)
    if columns != data.series.columns or not np.allclose(scaler.mean, data.scaler.mean):
        raise UserError(f"{cfg.csv}: its training rows differ from those {run_dir} was "
                        "trained on; give the same CSV")
    return cfg, model, data


def evaluate_run(run_dir: str | Path, drop_last: tuple[int, ...] = ()) -> dict:
    """Test-split MSE/MAE of the best checkpoint (and of the reference code's windows, see
    :func:`evaluate`); also written to RUN_DIR/test_results.json."""
    cfg, model, data = load_run(run_dir)
    result = {"csv": cfg.csv, "model": cfg.model, "input_length": cfg.input_length,
              "horizon": cfg.horizon, **evaluate(model, data, "test", drop_last=drop_last)}
    write_text(Path(run_dir) / "test_results.json", json.dumps(result, indent=2) + "\n")
    return result
