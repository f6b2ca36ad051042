"""One linear map from the window to the horizon (RLinear, DLinear's trend and
remainder), with a point forecast only: (B, H, C, 1).

Legend: B batch, L input length, H horizon, C channels.
"""

from __future__ import annotations

from torch import Tensor, nn
from torch.nn import functional as F

from transduce.nn.forecasting.norms import finish, instance_norm


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
