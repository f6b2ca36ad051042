"""What a forecaster attends to, laid out on the series' dates (``Forecaster.attention``)."""

from __future__ import annotations

import numpy as np
import torch

from transduce.errors import UserError
from transduce.runs import is_blend
from transduce.tasks.forecasting.evaluation import Ahead
from transduce.tasks.forecasting.models import MODELS
from transduce.tasks.forecasting.rundir import check_finite


@torch.no_grad()
def attention_of(forecaster, ahead: Ahead, name: str = "<rows>") -> dict:
    """The last layer's attention of ``forecaster`` when it forecasts after the one window
    of ``ahead`` (see ``Forecaster.attention``), its steps labelled by their text."""
    cfg, label = forecaster.cfg, forecaster.cfg.model.name
    layout = cfg.model.attention()
    if is_blend(forecaster.run_dir):
        raise UserError(
            f"{forecaster.run_dir}: a blend of runs has no one attention; load one "
            "of its runs to see it"
        )
    if layout is None:
        having = [name for name, model in MODELS.items() if model.ATTENTION]
        raise UserError(
            f"a {label} model{' with these settings' if label in having else ''} has no "
            f"attention to show; the {', '.join(having)} models have (channel with "
            "mix_channels=true)"
        )
    x, _, x_time, _, _ = ahead.ends.batch([0])
    y_time = torch.from_numpy(np.asarray(ahead.features, np.float32))
    forecast, weights = forecaster.model(x, x_time, y_time, need_weights=True)
    check_finite(forecast.numpy(), ahead.read, name)  # else the weights are NaN
    if weights is None:
        raise UserError(
            f"this {label} model keeps no attention weights (residual "
            "attention); retrain without residual_attention to see them"
        )
    given = ahead.given
    out = {
        "model": label,
        "date_column": forecaster.date_column,
        "input_dates": given,
        "forecast_dates": ahead.later,
    }
    if layout == "steps":
        known = cfg.model.label_length
        w = weights[0]  # (heads, K + H, L)
        return {
            **out,
            "layout": "steps",
            "rows": given[len(given) - known :] + ahead.later,
            "known_rows": known,
            "columns": given,
            "weights": np.round(w.float().numpy(), 5).tolist(),
        }
    if layout == "patches":
        core = forecaster.model.model if hasattr(forecaster.model, "model") else forecaster.model
        member = core.members[0] if hasattr(core, "members") else core
        P, S = member.patch_len, member.stride
        patches = [
            f"{given[min(n * S, len(given) - 1)]} – {given[min(n * S + P - 1, len(given) - 1)]}"
            for n in range(member.num_patches)
        ]
        w = weights[0]  # (C, heads, N, N)
        return {
            **out,
            "layout": "patches",
            "rows": patches,
            "columns": patches,
            "channels": forecaster.columns[: forecaster.inputs],
            "patch_len": P,
            "stride": S,
            "weights": np.round(w.float().numpy(), 5).tolist(),
        }
    w = weights[0]  # (heads, C, C)
    names = list(forecaster.columns[: forecaster.inputs])
    return {
        **out,
        "layout": "channels",
        "rows": names,
        "columns": names,
        "weights": np.round(w.float().numpy(), 5).tolist(),
    }
