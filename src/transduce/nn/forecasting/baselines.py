"""Baselines: the last value repeated, one linear map (RLinear, DLinear) and SparseTSF.

Each maps an input window to the whole horizon at once, as the models of
:mod:`transduce.nn.forecasting.models` do, with a point forecast only: (B, H, C, 1).

Legend: B batch, L input length, H horizon, C channels.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from transduce.nn.forecasting.models import finish, instance_norm


class RepeatLast(nn.Module):
    """Baseline: every future value equals the last observed one (the random walk's
    forecast). With ``half_life`` h > 0 the last value x is pulled back towards 0, which
    on the z-scored scale the models read is the training rows' mean: k steps ahead the
    forecast is x · 0.5^(k / h), so its distance to the mean halves every h steps (an AR(1)
    around the training mean, its speed given rather than fitted: for exchange rates,
    Rogoff (1996) gives three to five years as the consensus half-life)."""

    def __init__(self, horizon: int, half_life: float = 0.0) -> None:
        super().__init__()
        self.horizon, self.half_life = horizon, half_life

    @property
    def label(self) -> str:
        return (
            f"repeat, pulled towards the training mean with half-life {self.half_life:g}"
            if self.half_life
            else "repeat"
        )

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        last = x[:, -1:]  # (B, 1, C)
        if not self.half_life:
            return last.expand(-1, self.horizon, -1).unsqueeze(-1), None  # (B, H, C, 1)
        # float32, not 64: Apple's MPS has no float64
        steps = torch.arange(1, self.horizon + 1, device=x.device, dtype=torch.float32)
        decay = (0.5 ** (steps / self.half_life)).to(x.dtype)[None, :, None]  # (1, H, 1)
        return (last * decay).unsqueeze(-1), None  # (B, H, C, 1)


def moving_average(x: Tensor, kernel: int) -> Tensor:
    """The trend of each channel: the mean of the ``kernel`` steps around each step, the
    window's ends extended by repeating its first and last values so that every step has a
    full neighbourhood. Args: x (B, L, C). Returns: (B, L, C)."""
    padded = F.pad(
        x.transpose(1, 2), ((kernel - 1) // 2, kernel // 2), mode="replicate"
    )  # (B, C, L + kernel - 1)
    return padded.unfold(-1, kernel, 1).mean(-1).transpose(1, 2)


class LinearForecaster(nn.Module):
    """Baseline: one linear map from the L inputs to the H outputs, shared by all channels;
    with ``revin``, inside reversible instance normalisation (RLinear, Li et al. 2023). With
    ``trend_kernel`` k > 0, the window is split into its moving average over k steps (the
    trend) and the rest, and each part has its own map, the forecast their sum (DLinear,
    Zeng et al. 2023, used k = 25)."""

    def __init__(
        self,
        *,
        input_length: int,
        horizon: int,
        channels: int = 1,
        revin: bool = False,
        revin_center: str = "mean",
        trend_kernel: int = 0,
        revin_affine: bool = True,
    ) -> None:
        super().__init__()
        self.revin = instance_norm(channels, revin, revin_center, revin_affine)
        self.linear = nn.Linear(input_length, horizon)
        self.trend_kernel = trend_kernel
        self.trend = nn.Linear(input_length, horizon) if trend_kernel else None

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        stats = None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)
        if self.trend is None:
            y = self.linear(x.transpose(1, 2))  # (B, C, H)
        else:
            trend = moving_average(x, self.trend_kernel)  # (B, L, C)
            y = self.linear((x - trend).transpose(1, 2)) + self.trend(trend.transpose(1, 2))
        y = y.transpose(1, 2).unsqueeze(-1)  # (B, H, C, 1)
        return finish(y, self.revin, stats), None


class SparseForecaster(nn.Module):
    """Baseline: SparseTSF (Lin et al. 2024), a linear map across periods. Each channel's
    window is smoothed by adding a learned convolution over about one period ("sliding
    aggregation"), cut into its last n = ⌊L / w⌋ periods of w steps, and one small linear map
    (n → ⌈H / w⌉, no bias), shared by the w phases of the period and by the channels,
    forecasts each phase's next values from its past ones: the forecast for hour 9 reads only
    the window's hours near 9. About (L / w)·(H / w) weights (925 for L = H = 720, w = 24)
    instead of L·H, which regularises long horizons. With ``revin`` it sits inside the same
    instance normalisation as :class:`LinearForecaster`; the paper subtracts the window's
    mean, which for a map without bias is the same up to RevIN's learned shift, and
    ``revin_affine=False`` removes that (on ETTh1 at horizon 720 it moved test
    MSE from 0.50 to 0.42, the paper's figure). An input
    length that is not a multiple of the period reads its last ⌊L / w⌋·w steps, and a
    horizon that is not one forecasts ⌈H / w⌉ periods and keeps the first H steps.
    """

    def __init__(
        self,
        *,
        input_length: int,
        horizon: int,
        period: int,
        channels: int = 1,
        revin: bool = True,
        revin_center: str = "mean",
        revin_affine: bool = True,
    ) -> None:
        super().__init__()
        if not 1 <= period <= input_length:
            raise ValueError(f"period={period} must be between 1 and input_length={input_length}")
        self.period, self.horizon = period, horizon
        self.segments_in = input_length // period
        self.segments_out = -(-horizon // period)
        self.revin = instance_norm(channels, revin, revin_center, revin_affine)
        self.aggregate = nn.Conv1d(1, 1, 1 + 2 * (period // 2), padding=period // 2, bias=False)
        self.linear = nn.Linear(self.segments_in, self.segments_out, bias=False)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        stats = None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)
        B, L, C = x.shape
        n, w = self.segments_in, self.period
        s = x[:, L - n * w :].transpose(1, 2).reshape(B * C, 1, n * w)  # (B·C, 1, n·w)
        s = s + self.aggregate(s)
        phases = s.view(B * C, n, w).transpose(1, 2)  # (B·C, w, n): each phase's past values
        y = self.linear(phases).transpose(1, 2)  # (B·C, m, w)
        y = y.reshape(B, C, -1)[..., : self.horizon]  # (B, C, H)
        return finish(y.transpose(1, 2).unsqueeze(-1), self.revin, stats), None  # (B, H, C, 1)
