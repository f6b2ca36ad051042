"""Scoring and loading forecasters: `transduce forecast test` and what predict/plot load.

A forecasting run directory is a run directory like any other (see :mod:`transduce.runs`);
its checkpoints hold the training rows' scaler too. `test` adds test_results.json.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from transduce.data.windows import Scaler
from transduce.errors import UserError
from transduce.evaluation.quantiles import band_coverage, rho_loss
from transduce.tasks.forecasting.config import ForecastConfig
from transduce.tasks.forecasting.data import ForecastData, load_forecast_data


def scaler_state(data: ForecastData) -> dict:
    return {
        "mean": torch.from_numpy(data.scaler.mean),
        "std": torch.from_numpy(data.scaler.std),
        "columns": data.series.columns,
    }


@torch.no_grad()
def evaluate(
    model,
    data: ForecastData,
    split: str,
    batch_size: int = 256,
    drop_last: tuple[int, ...] = (),
    quantiles: tuple[float, ...] = (),
) -> dict:
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
    mean, std = (
        torch.from_numpy(np.asarray(v, np.float64))
        for v in (data.target_scaler.mean, data.target_scaler.std)
    )
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
        return {
            "mse": float(squared[:n].sum()) / count,
            "mae": float(absolute[:n].sum()) / count,
            "windows": n,
        }

    result = scores(len(squared))
    if quantiles:
        result["rho_risk"] = {f"{rho:g}": float(2 * r / scale) for rho, r in zip(quantiles, risk)}
        result["coverage"] = {band: c / (len(squared) * per_window) for band, c in inside.items()}
    if drop_last:
        result["drop_last"] = {
            b: scores(len(squared) // b * b) for b in drop_last if len(squared) >= b
        }
    return result


def run_data(run_dir: str | Path, cfg: ForecastConfig, scaler: Scaler, columns) -> ForecastData:
    """The data of ``cfg``, checked to be the rows the run was trained on (same columns and
    training-row scaler)."""
    data = load_forecast_data(cfg)
    if columns != data.series.columns or not np.allclose(scaler.mean, data.scaler.mean):
        raise UserError(
            f"{cfg.csv}: its training rows differ from those {run_dir} was "
            "trained on; give the same CSV"
        )
    return data
