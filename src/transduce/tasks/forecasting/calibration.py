"""Calibrating the quantile bands on the validation split (conformalized quantile regression).

Quantile heads can come out of training too narrow or too wide for the period they forecast:
on a series close to a random walk, a few epochs at a small learning rate leave the 0.1-0.9
band around a fraction of the values it should hold. Calibration widens (or narrows) each
central band by what the validation split says it needs, as conformalized quantile
regression does (Romano et al. 2019), per horizon step and with each window's own spread:

    E = max(q̂_low − y, y − q̂_high) / σ   for every validation window, channel and step h,
    w[h] = the (high − low)-quantile of E over the windows and channels at step h,

σ being the standard deviation of that channel over that window's input (at least
``MIN_SPREAD`` on the normalised scale, so that a flat window does not blow the score up).
The calibrated band is [q̂_low − w[h]·σ, q̂_high + w[h]·σ], so that it holds its nominal
share of the validation values. Only the width moves: the point forecast and a level without
a partner (the median) stay where they were, since a shift of location fitted to one period
is a bet that the next drifts the same way. The shifts (Q, H) are written to
RUN_DIR/calibration.json with the step of the checkpoint they were fitted to, and every
loader of the run applies them (a file fitted to another checkpoint is ignored, with a
warning). The validation split must resemble what is forecast: on a short split of a
drifting series the calibrated band can still miss.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from transduce import runs
from transduce.errors import UserError
from transduce.evaluation.quantiles import intervals

MIN_SPREAD = 1e-2  # normalised units: a window flatter than this counts as this flat
log = logging.getLogger("transduce.calibration")


def spread(x: Tensor, channels: int) -> Tensor:
    """σ of each of the first ``channels`` channels over each input window. x (B, L, C)
    → (B, 1, channels)."""
    return x[..., :channels].std(1, keepdim=True, unbiased=False).clamp_min(MIN_SPREAD)


class Calibrated(nn.Module):
    """A forecaster whose quantiles are moved by fitted shifts (Q, H) times each window's σ
    (channel by channel), then sorted so that they cannot cross."""

    def __init__(self, model: nn.Module, shifts: Tensor) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("shifts", shifts)  # (Q, H)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        y, weights = self.model(x, x_time, y_time, need_weights)  # (B, H, C, 1 + Q)
        moved = move(y[..., 1:], self.shifts, spread(x, y.shape[2]))
        return torch.cat([y[..., :1], moved], -1), weights


def move(quantiles: Tensor, shifts: Tensor, sigma: Tensor) -> Tensor:
    """Quantiles (B, H, C, Q) moved by shifts (Q, H) times σ (B, 1, C), then sorted."""
    moved = quantiles + shifts.T[None, :, None, :].to(quantiles.dtype) * sigma.unsqueeze(-1)
    return moved.sort(-1).values


@torch.no_grad()
def outputs(
    model: nn.Module, data, split: str = "val", batch_size: int = 256
) -> tuple[Tensor, Tensor, Tensor]:
    """One pass of ``model`` over ``split``: its quantiles (N, H, C, Q), the true values
    (N, H, C) and each window's σ (N, 1, C), on the normalised scale."""
    model.eval()
    levels, truths, sigmas = [], [], []
    for x, y, x_time, y_time in data.loader(split, batch_size):
        forecast, _ = model(x, x_time, y_time)  # (B, H, C, 1 + Q)
        levels.append(forecast[..., 1:].float())
        truths.append(y.float())
        sigmas.append(spread(x, forecast.shape[2]))
    if not levels:
        raise UserError(
            f"no {split} windows to calibrate the quantiles on; lower "
            "input_length or horizon, or give a longer series"
        )
    return torch.cat(levels), torch.cat(truths), torch.cat(sigmas)


def fit_shifts(
    model: nn.Module, data, levels: tuple[float, ...], split: str = "val", batch_size: int = 256
) -> np.ndarray:
    """The shifts (Q, H), in units of each window's σ, that make every central band of
    ``levels`` hold its nominal share of ``split``'s values: −w for its lower level, +w for
    its upper one, 0 for a level in no band."""
    return shifts_for(*outputs(model, data, split, batch_size), levels)


def shifts_for(q: Tensor, y: Tensor, sigma: Tensor, levels: tuple[float, ...]) -> np.ndarray:
    """:func:`fit_shifts` from one pass's :func:`outputs`."""
    pairs = intervals(list(levels))
    band = torch.stack(
        [torch.maximum(q[..., lo] - y, y - q[..., hi]) / sigma for lo, hi in pairs], -1
    )  # (N, H, C, P)
    pooled = band.permute(1, 3, 0, 2).flatten(2).double().numpy()  # (H, P, N·C)
    shifts = np.zeros((len(levels), pooled.shape[0]))
    for p, (lo, hi) in enumerate(pairs):
        share = min(1.0, (levels[hi] - levels[lo]) * (pooled.shape[-1] + 1) / pooled.shape[-1])
        width = np.quantile(pooled[:, p], share, axis=-1)  # (H,)
        shifts[lo], shifts[hi] = -width, width
    return shifts


def describe(record: dict) -> str:
    """One line: the validation share each band held, as trained and as calibrated."""
    return "; ".join(
        f"validation {band} band held {100 * before:.1f}% of values, "
        f"{100 * record['coverage_after'][band]:.1f}% calibrated "
        f"({record['windows']} windows)"
        for band, before in record["coverage_before"].items()
    )


def apply_saved(
    run_dir: str | Path, model: nn.Module, step: int, levels: tuple[float, ...], horizon: int
) -> nn.Module:
    """``model`` wrapped in its run's calibration, if the run has one fitted to ``step``."""
    path = Path(run_dir) / runs.CALIBRATION
    if not levels or not path.is_file():
        return model
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        shifts = torch.tensor(record["shifts"], dtype=torch.float32)
        fitted_to, saved_levels = int(record["step"]), tuple(record["levels"])
    except (ValueError, KeyError, TypeError) as error:
        raise UserError(
            f"{path}: not a calibration transduce wrote ({error}); delete it or "
            "run transduce forecast calibrate again"
        ) from None
    if fitted_to != step or saved_levels != tuple(levels):
        log.warning(
            f"transduce: warning: {path} was fitted to step {fitted_to}, not to the "
            f"best checkpoint (step {step}); its quantiles are left uncalibrated. "
            f"Run transduce forecast calibrate {run_dir}"
        )
        return model
    if tuple(shifts.shape) != (len(levels), horizon):
        raise UserError(
            f"{path}: its shifts do not match the run's {len(levels)} quantile "
            f"levels × horizon {horizon}; run transduce forecast calibrate again"
        )
    return Calibrated(model, shifts).eval()
