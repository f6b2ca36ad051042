"""Scoring and loading forecasters: `transduce forecast test` and what predict/plot load.

A forecasting run directory is a run directory like any other (see :mod:`transduce.runs`);
its checkpoints hold the training rows' scaler too. `test` adds test_results.json.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import torch

from transduce import runs
from transduce.config import apply_mapping
from transduce.data.timeseries import Scaler
from transduce.errors import UserError
from transduce.forecasting.config import ForecastConfig, build_forecaster
from transduce.forecasting.data import ForecastData, load_forecast_data
from transduce.forecasting.quantiles import band_coverage, rho_loss
from transduce.io import write_text


def scaler_state(data: ForecastData) -> dict:
    return {"mean": torch.from_numpy(data.scaler.mean), "std": torch.from_numpy(data.scaler.std),
            "columns": data.series.columns}


@torch.no_grad()
def evaluate(model, data: ForecastData, split: str, batch_size: int = 256,
             drop_last: tuple[int, ...] = (), quantiles: tuple[float, ...] = ()) -> dict:
    """MSE and MAE of the point forecast on the normalised scale, averaged over windows ×
    horizon × channels; with ``quantiles`` (the model's levels), also the ρ-risk of each
    level (``rho_risk`` → ρ, on the original scale) and the coverage of each central
    interval (``coverage`` → "0.1-0.9": the share of true values inside it).

    ``drop_last``: also score, for each batch size B given, only the first ⌊n / B⌋ · B
    windows, as the reference implementations' test loaders do (``drop_last=True``); their
    published figures leave out the last incomplete batch. Under ``"drop_last"`` → B.
    """
    model.eval()
    device = next(model.parameters(), torch.empty(0)).device
    squared, absolute = [], []  # per window, summed over horizon × channels
    mean, std = (torch.from_numpy(np.asarray(v, np.float64)) for v in
                 (data.target_scaler.mean, data.target_scaler.std))
    risk, scale, inside = np.zeros(len(quantiles)), 0.0, {}  # inside: band → values in it
    for x, y, x_time, y_time in data.loader(split, batch_size):
        forecast, _ = model(x.to(device), x_time.to(device), y_time.to(device))
        forecast = forecast.cpu().double()  # (B, H, C, 1 + Q)
        error = (forecast[..., 0] - y).flatten(1)  # (B, H·C)
        squared.append((error**2).sum(1))
        absolute.append(error.abs().sum(1))
        if quantiles:  # on the original scale
            truth = y.double() * std + mean  # (B, H, C)
            levels = forecast[..., 1:] * std[:, None] + mean[:, None]  # (B, H, C, Q)
            scale += float(truth.abs().sum())
            for k, rho in enumerate(quantiles):
                risk[k] += rho_loss(levels[..., k].numpy(), truth.numpy(), rho)
            for band, share in band_coverage(levels, truth, quantiles).items():
                inside[band] = inside.get(band, 0.0) + share * truth.numel()
    squared, absolute = torch.cat(squared), torch.cat(absolute)
    per_window = data.windows[split][0][1].numel()  # H · C values

    def scores(n: int) -> dict:
        count = n * per_window
        return {"mse": float(squared[:n].sum()) / count, "mae": float(absolute[:n].sum()) / count,
                "windows": n}
    result = scores(len(squared))
    if quantiles:
        result["rho_risk"] = {f"{rho:g}": float(2 * r / scale)
                              for rho, r in zip(quantiles, risk)}
        result["coverage"] = {band: c / (len(squared) * per_window)
                              for band, c in inside.items()}
    if drop_last:
        result["drop_last"] = {b: scores(len(squared) // b * b) for b in drop_last
                               if len(squared) >= b}
    return result


def load_model(run_dir: str | Path, checkpoint: str = runs.BEST, calibrated: bool = True):
    """The config, model (eval mode) and training-row scaler of a trained run; with
    ``calibrated``, its quantiles moved by the run's calibration.json when one was fitted
    to this checkpoint (see :mod:`transduce.forecasting.calibration`). A folder that
    ``forecast blend`` wrote gives its blend (:func:`~transduce.forecasting.blend.load_blend`).
    """
    from transduce.forecasting.blend import is_blend, load_blend

    if is_blend(run_dir):
        return load_blend(run_dir, calibrated)
    return load_checkpoint_model(run_dir, checkpoint, calibrated)[:4]


def load_checkpoint_model(run_dir: str | Path, checkpoint: str = runs.BEST,
                          calibrated: bool = True):
    """:func:`load_model`'s config, model, scaler and columns, and the checkpoint's step."""
    from transduce.forecasting.calibration import apply_saved

    if not Path(run_dir).is_dir():
        raise UserError(f"{run_dir}: no such run directory; give one that forecast train "
                        "--run-dir (or forecast blend --output) wrote")
    path = runs.checkpoint_dir(run_dir) / checkpoint
    state = runs.load_checkpoint(path, "forecast")
    try:
        cfg = apply_mapping(ForecastConfig(), state["config"], str(path))
        scaler = state["extra"]["scaler"]
        columns = list(scaler["columns"])
    except (KeyError, TypeError, AttributeError) as error:
        raise UserError(f"{path}: not a forecast checkpoint transduce wrote (no "
                        f"{error} in its record)") from None
    weights = state.get("model")
    if cfg.model == "linear" and cfg.revin and isinstance(weights, dict) and \
            "revin.weight" not in weights:
        # a linear run trained before the model honoured revin: it had none
        cfg = dataclasses.replace(cfg, revin=False)
    model = runs.build_model(path, state, lambda _: build_forecaster(cfg, len(columns)))
    step = int(state.get("step", -1))
    if calibrated:
        model = apply_saved(run_dir, model, step, cfg.quantiles, cfg.horizon)
    return cfg, model.eval(), Scaler(scaler["mean"].numpy(), scaler["std"].numpy()), \
        scaler["columns"], step


def load_run(run_dir: str | Path, calibrated: bool = True):
    """:func:`load_model` plus the run's data, checked to be what it was trained on."""
    cfg, model, scaler, columns = load_model(run_dir, calibrated=calibrated)
    return cfg, model, run_data(run_dir, cfg, scaler, columns)


def run_data(run_dir: str | Path, cfg: ForecastConfig, scaler: Scaler, columns) -> ForecastData:
    """The data of ``cfg``, checked to be the rows the run was trained on (same columns and
    training-row scaler)."""
    data = load_forecast_data(cfg)
    if columns != data.series.columns or not np.allclose(scaler.mean, data.scaler.mean):
        raise UserError(f"{cfg.csv}: its training rows differ from those {run_dir} was "
                        "trained on; give the same CSV")
    return data


def evaluate_run(run_dir: str | Path, drop_last: tuple[int, ...] = ()) -> dict:
    """Test-split MSE/MAE of the best checkpoint (and of the reference code's windows, and
    the ρ-risks and interval coverage of a probabilistic run, see :func:`evaluate`); also
    written to RUN_DIR/test_results.json. A calibrated run's quantiles are scored as
    calibrated, and also as trained (under ``"uncalibrated"``)."""
    from transduce.forecasting.calibration import Calibrated

    cfg, model, data = load_run(run_dir)
    result = {"csv": cfg.csv, "model": getattr(model, "label", cfg.model),
              "input_length": cfg.input_length,
              "horizon": cfg.horizon, "quantiles": list(cfg.quantiles),
              **evaluate(model, data, "test", drop_last=drop_last, quantiles=cfg.quantiles)}
    result["calibrated"] = isinstance(model, Calibrated)
    if result["calibrated"]:
        raw = evaluate(model.model, data, "test", quantiles=cfg.quantiles)
        result["uncalibrated"] = {"rho_risk": raw["rho_risk"], "coverage": raw["coverage"]}
    write_text(Path(run_dir) / "test_results.json", json.dumps(result, indent=2) + "\n")
    return result
