"""Scoring and loading forecasters: `transduce forecast test` and what predict/plot load.

A forecasting run directory is a run directory like any other (see :mod:`transduce.runs`);
its checkpoints hold the training rows' scaler too. `test` adds test_results.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from transduce.data.windows import Scaler, Windows
from transduce.errors import UserError
from transduce.evaluation import m4
from transduce.evaluation.quantiles import band_coverage, rho_loss
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import ForecastData, load_forecast_data


@torch.no_grad()
def evaluate(
    model,
    data: ForecastData,
    split: str,
    batch_size: int = 256,
    drop_last: tuple[int, ...] = (),
    quantiles: tuple[float, ...] = (),
) -> dict:
    """MSE and MAE of the point forecast on the windows' scale (a wide CSV's train-row
    z-scores, a long table's per-window scale), averaged over windows × horizon ×
    channels; for windows scaled one by one, also their sMAPE in the series' units; with
    ``quantiles`` (the model's levels), also the ρ-risk of each level (``rho_risk`` → ρ,
    in the series' units) and the coverage of each central interval (``coverage`` →
    "0.1-0.9": the share of true values inside it).

    ``drop_last``: also score, for each batch size B given, only the first ⌊n / B⌋ · B
    windows, as the reference implementations' test loaders do (``drop_last=True``); their
    published figures leave out the last incomplete batch. Under ``"drop_last"`` → B.
    """
    model.eval()
    device = next(model.parameters(), torch.empty(0)).device
    windows = data.windows[split]
    squared, absolute, smape = [], [], []  # per window, summed over horizon × channels
    mean, std = (
        torch.from_numpy(np.asarray(v, np.float64))
        for v in (data.target_scaler.mean, data.target_scaler.std)
    )
    risk, scale, inside = np.zeros(len(quantiles)), 0.0, {}  # inside: band → values in it
    for start in range(0, len(windows), batch_size):
        chunk = range(start, min(start + batch_size, len(windows)))
        x, y, x_time, y_time, scales = windows.batch(chunk)
        forecast, _ = model(x.to(device), x_time.to(device), y_time.to(device))
        forecast = forecast.cpu().double()  # (B, H, C, 1 + Q)
        error = (forecast[..., 0] - y).flatten(1)  # (B, H·C)
        squared.append((error**2).sum(1))
        absolute.append(error.abs().sum(1))
        if not (windows.scaling or quantiles):
            continue
        units, truth = in_units(windows, forecast, y, scales, mean, std)
        if windows.scaling:
            smape.append(m4.smape_terms(units[..., 0].numpy(), truth.numpy()).reshape(-1))
        if quantiles:
            levels = units[..., 1:]  # (B, H, C, Q)
            scale += float(truth.abs().sum())
            for k, rho in enumerate(quantiles):
                risk[k] += rho_loss(levels[..., k].numpy(), truth.numpy(), rho)
            for band, share in band_coverage(levels, truth, quantiles).items():
                inside[band] = inside.get(band, 0.0) + share * truth.numel()
    if not squared:
        raise UserError(f"no {split} windows to score; give a longer series")
    squared, absolute = torch.cat(squared), torch.cat(absolute)
    per_window = windows[0][1].numel()  # H · C values

    def scores(n: int) -> dict:
        count = n * per_window
        return {
            "mse": float(squared[:n].sum()) / count,
            "mae": float(absolute[:n].sum()) / count,
            "windows": n,
        }

    result = scores(len(squared))
    if smape:
        result["smape"] = float(np.concatenate(smape).mean())
    if quantiles:
        result["rho_risk"] = {f"{rho:g}": float(2 * r / scale) for rho, r in zip(quantiles, risk)}
        result["coverage"] = {band: c / (len(squared) * per_window) for band, c in inside.items()}
    if drop_last:
        result["drop_last"] = {
            b: scores(len(squared) // b * b) for b in drop_last if len(squared) >= b
        }
    return result


def in_units(windows: Windows, forecast, y, scales, mean, std) -> tuple:
    """(forecast (B, H, C, 1 + Q), truth (B, H, C)) in the series' units: each window's
    own scale taken off, then the data's z-scores (``mean``, ``std`` of the forecast
    columns)."""
    units = torch.from_numpy(windows.restore(forecast.numpy(), scales[:, None, :, None]))
    truth = torch.from_numpy(windows.restore(y.double().numpy(), scales[:, None, :]))
    return units * std[:, None] + mean[:, None], truth * std + mean


@dataclass
class Ahead:
    """What a forecast after the end of series reads and is for: ``ends``, its windows cut
    with horizon 0 (each a series' last input steps); ``features``, (B, H, F) those of the
    steps forecast; ``steps``, the steps forecast (of one series); ``given`` and
    ``later``, the input and forecast steps as text; ``read``, the values read."""

    ends: Windows
    features: np.ndarray
    steps: list
    given: list[str]
    later: list[str]
    read: np.ndarray


@torch.no_grad()
def forecast_ends(model, ends: Windows, ahead: np.ndarray, target: Scaler) -> np.ndarray:
    """(B, H, C', 1 + Q) forecasts in the series' units after each window of ``ends`` (cut
    with horizon 0: each the last input steps of a series), given the ``ahead`` (B, H, F)
    features of the steps forecast: the point forecast, then each quantile. ``target``: the
    forecast columns' z-scores, taken off after the windows' own scale."""
    x, _, x_time, _, scales = ends.batch(range(len(ends)))
    forecast, _ = model(x, x_time, torch.from_numpy(np.asarray(ahead, np.float32)))
    values = ends.restore(forecast.double().numpy(), scales[:, None, :, None])
    return values * target.std[:, None] + target.mean[:, None]


def run_data(run_dir: str | Path, cfg: ForecastConfig, scaler: Scaler, columns) -> ForecastData:
    """The data of ``cfg``, checked to be the rows the run was trained on (same columns and
    training-row scaler)."""
    data = load_forecast_data(cfg)
    if columns != data.channels or not np.allclose(scaler.mean, data.scaler.mean):
        raise UserError(
            f"{cfg.csv}: its training rows differ from those {run_dir} was "
            "trained on; give the same CSV"
        )
    return data
