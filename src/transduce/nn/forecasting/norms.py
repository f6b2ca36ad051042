"""What every forecaster shares: reversible instance normalisation (RevIN, Kim et al.
2022), which each window's statistics undo after the model, and :func:`finish`, which puts
a forecast back on the window's scale.

Legend: B batch, L input length, H horizon, C channels, Q quantile levels.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

CENTERS = ("mean", "last")


class InstanceNorm(nn.Module):
    """Reversible instance normalisation (Kim et al. 2022, RevIN): each window and channel is
    standardised by its own mean and std, and the forecast is mapped back with the same ones.
    A forecaster wrapped in it follows an affine change a·x + b (a > 0) of its input exactly.

    Args:
        channels: C, for the learnable per-channel affine map.
        affine: learn a scale and shift applied after standardising.
        center: "mean" subtracts the window's mean; "last" its last value (PatchTST's
            ``subtract_last``), so that a forecast of zeros repeats the last value, which
            suits series close to a random walk.
    """

    def __init__(
        self, *, channels: int, affine: bool = True, eps: float = 1e-5, center: str = "mean"
    ) -> None:
        super().__init__()
        if center not in CENTERS:
            raise ValueError(f"center must be one of {CENTERS}, not {center!r}")
        self.eps, self.center = eps, center
        self.weight = nn.Parameter(torch.ones(channels)) if affine else None
        self.bias = nn.Parameter(torch.zeros(channels)) if affine else None

    def normalise(self, x: Tensor) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Args: x (B, L, C). Returns: normalised x and the (centre, std) to undo it: the
        centre (B, 1, C) is the mean or the last value."""
        mean = (x.mean(1, keepdim=True) if self.center == "mean" else x[:, -1:]).detach()
        std = (x.var(1, keepdim=True, unbiased=False) + self.eps).sqrt().detach()  # (B, 1, C)
        x = (x - mean) / std
        if self.weight is not None:
            x = x * self.weight + self.bias
        return x, (mean, std)

    def denormalise(self, y: Tensor, stats: tuple[Tensor, Tensor]) -> Tensor:
        """Args: y (B, H, C'), or (B, H, C', K) for K outputs per value, for the first C' of
        the C channels (the forecast ones). Returns: y in the input's units."""
        if y.dim() == 4:
            B, H, C, K = y.shape
            flat = y.permute(0, 3, 1, 2).reshape(B, K * H, C)  # (B, K·H, C')
            return self.denormalise(flat, stats).view(B, K, H, C).permute(0, 2, 3, 1)
        C = y.shape[-1]
        if self.weight is not None:
            y = (y - self.bias[:C]) / (self.weight[:C] + self.eps * self.eps)
        mean, std = stats
        return y * std[..., :C] + mean[..., :C]


def instance_norm(
    channels: int, revin: bool, center: str = "mean", affine: bool = True
) -> InstanceNorm | None:
    """A model's RevIN, or None where ``revin`` is off."""
    return InstanceNorm(channels=channels, affine=affine, center=center) if revin else None


def finish(y: Tensor, revin: InstanceNorm | None, stats) -> Tensor:
    """Back to the input's units; the quantiles sorted (RevIN's learned scale may be
    negative, which would turn them upside down)."""
    if revin is not None:
        y = revin.denormalise(y, stats)
    if y.shape[-1] > 2:
        y = torch.cat([y[..., :1], y[..., 1:].sort(-1).values], -1)
    return y
