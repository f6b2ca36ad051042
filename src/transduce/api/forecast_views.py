"""What `forecast test` and `forecast plot` show of a run: its test scores as lines of text,
and a figure of one of its test windows (with the attention, where the model has one)."""

from __future__ import annotations

from pathlib import Path

import torch

from transduce import runs
from transduce.errors import UserError
from transduce.tasks.forecasting.rundir import load_run
from transduce.viz.forecast import plot_channel_attention, plot_cross_attention, plot_forecast


def split_lines(result: dict) -> list[str]:
    """A run's test-split scores (``Forecaster.test`` of a run of one CSV), as lines."""
    lines = [
        f"test mse {result['mse']:.4f} mae {result['mae']:.4f} "
        f"({result['windows']} windows, horizon {result['horizon']})"
    ]
    if result.get("rho_risk"):
        risks = " ".join(f"R{rho} {r:.4f}" for rho, r in result["rho_risk"].items())
        covered = " ".join(f"{band} {100 * c:.1f}%" for band, c in result["coverage"].items())
        lines.append(
            f"  quantiles{' (calibrated on validation)' if result['calibrated'] else ''}: "
            f"{risks}; coverage {covered}"
        )
    for batch, scores in result.get("drop_last", {}).items():
        lines.append(
            f"  first {scores['windows']} windows (drop_last, batch {batch}): "
            f"mse {scores['mse']:.4f} mae {scores['mae']:.4f}"
        )
    return lines


def m4_lines(result: dict) -> list[str]:
    """A global run's M4 scores, as lines; "n/a" where one is undefined (see
    evaluation.m4.score)."""

    def shown(value, digits: int = 3) -> str:
        return "n/a" if value is None else f"{value:.{digits}f}"

    lines = [
        f"{result['series']} series, horizon {result['horizon']}: sMAPE "
        f"{shown(result['smape'])} MASE {shown(result['mase'])} OWA {shown(result['owa'])} "
        f"(Naive2: sMAPE {shown(result['naive2_smape'])} MASE "
        f"{shown(result['naive2_mase'])}; seasonality {result['season']})"
    ]
    if result["mase_series"] < result["series"]:
        lines.append(
            f"  MASE over {result['mase_series']} of {result['series']} series: the others' "
            "histories repeat exactly (constant), so no error can be scaled by them"
        )
    if result["rho_risk"]:
        lines.append(
            "  " + " ".join(f"R{rho} {shown(r, 4)}" for rho, r in result["rho_risk"].items())
        )
    return lines


def plot_window(run_dir: str | Path, window: int, output: str | Path | None) -> list[Path]:
    """A PNG of test window ``window`` of a run of one CSV (its history, truth and
    forecast) and, for a model with step or channel attention, a heatmap of it beside;
    returns the paths written."""
    cfg, model, data = load_run(run_dir)
    windows = data.windows["test"]
    if not 0 <= window < len(windows):
        raise UserError(f"--window must be between 0 and {len(windows) - 1}")
    x, y, x_time, y_time = (t.unsqueeze(0) for t in windows[window])
    # the layouts with a figure (a patch model's maps are shown by explain and the API)
    layout = cfg.model.attention()
    attends = layout in ("steps", "channels")
    with torch.no_grad():
        forecast, weights = model(x, x_time, y_time, need_weights=attends)
    inverse = data.target_scaler.inverse
    out = Path(output or runs.forecast_plot(run_dir, window))
    title = (
        f"{Path(cfg.csv).name} · {getattr(model, 'label', cfg.model.name)} · test window {window}"
    )
    first = windows.start + window
    dates = data.series.dates[first : first + cfg.input_length + cfg.horizon]
    outputs = forecast[0].numpy()  # (H, C, 1 + Q)
    bands = inverse(outputs[..., 1:].transpose(2, 0, 1)).transpose(1, 2, 0)  # (H, C, Q)
    history = x[0, :, : data.targets or None].numpy()  # the forecast columns' history
    plot_forecast(
        inverse(history),
        inverse(y[0].numpy()),
        inverse(outputs[..., 0]),
        data.target_columns,
        out,
        title,
        bands if cfg.quantiles else None,
        cfg.quantiles,
        dates,
    )
    if weights is None:
        return [out]
    heatmap = out.with_name(out.stem + "_attention.png")
    if layout == "channels":
        plot_channel_attention(
            weights[0].mean(0).numpy(),
            list(data.series.columns),
            heatmap,
            title,
            heads=weights.shape[1],
            targets=data.targets or None,
        )
    else:
        plot_cross_attention(
            weights[0].mean(0).numpy(),
            cfg.model.label_length,
            heatmap,
            title,
            heads=weights.shape[1],
            dates=dates,
        )
    return [out, heatmap]
