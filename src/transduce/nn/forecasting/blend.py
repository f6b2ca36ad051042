"""A blend of forecasters: their weighted mean, each reading its own input length."""

from __future__ import annotations

from torch import nn


class Blend(nn.Module):
    """The weighted mean of several forecasters' outputs (B, H, C, 1 + Q); each member reads
    the last ``input_lengths[i]`` steps of the window it is given. With ``quantiles`` False,
    only the point forecasts are blended (B, H, C, 1)."""

    def __init__(
        self,
        *,
        members: list[nn.Module],
        input_lengths: list[int],
        weights: list[float],
        quantiles: bool,
        label: str = "blend",
    ) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)
        self.input_lengths, self.weights, self.quantiles = input_lengths, weights, quantiles
        self.label = label  # what plots call it

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        total = 0.0
        for member, length, weight in zip(self.members, self.input_lengths, self.weights):
            if weight == 0:
                continue
            times = None if x_time is None else x_time[:, x_time.shape[1] - length :]
            y, _ = member(x[:, x.shape[1] - length :], times, y_time)  # (B, H, C, 1 + Q)
            total = total + weight * (y if self.quantiles else y[..., :1])
        return total, None


def longest_input(configs) -> int:
    """The index of the config with the longest input: its windows hold every member's."""
    return max(range(len(configs)), key=lambda i: configs[i].input_length)
