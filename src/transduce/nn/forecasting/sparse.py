"""SparseTSF (Lin et al. 2024): one linear map between periods of the window, with a
point forecast only: (B, H, C, 1).

Legend: B batch, L input length, H horizon, C channels.
"""

from __future__ import annotations

from torch import nn

from transduce.nn.forecasting.norms import finish, instance_norm


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
