"""The paper's encoder–decoder on series: value embedding, sinusoidal positions and
calendar features; the decoder reads the last known steps, then placeholders under the
causal mask, and forecasts the whole horizon at once (as Informer does).

Legend: B batch, L input length, H horizon, C channels, D d_model, K label (known) length
fed to the decoder, Q quantile levels.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transduce.nn.builders import RESIDUALS
from transduce.nn.forecasting.norms import finish, instance_norm
from transduce.nn.forecasting.quantiles import ordered
from transduce.nn.layers import DecoderLayer, EncoderLayer
from transduce.nn.masks import subsequent_mask
from transduce.nn.positional import PositionalEncoding
from transduce.nn.transformer import Decoder, Encoder


class SeriesTransformer(nn.Module):
    """The paper's encoder–decoder applied to series (as in Wu et al. 2020 and Informer).

    Encoder input: a linear embedding of each step's C values, plus sinusoidal positions and
    a linear embedding of its ``time_features`` known features (the columns of x_time and
    y_time after the first ``skip_features``: the calendar, unless skipped, then known-future
    covariates). Decoder input: the last K known steps followed by H zero
    placeholders, embedded the same way (the placeholders with their known features), read
    under the causal mask; the last H decoder states are projected to the first ``targets``
    channels' values (the rest are past-observed covariates), the whole horizon at once.
    """

    def __init__(
        self,
        *,
        channels: int,
        horizon: int,
        label_length: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        num_encoder_layers: int,
        num_decoder_layers: int,
        dropout: float,
        time_features: int = 0,
        skip_features: int = 0,
        norm: str = "post",
        revin: bool = True,
        max_len: int = 4096,
        activation: str = "relu",
        quantiles: tuple[float, ...] = (),
        targets: int | None = None,
        revin_center: str = "mean",
        revin_affine: bool = True,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.horizon, self.label_length = horizon, label_length
        self.outputs, self.targets = 1 + len(quantiles), targets or channels
        self.skip_features = skip_features
        self.revin = instance_norm(channels, revin, revin_center, revin_affine)
        self.value_embed = nn.Linear(channels, d_model)
        self.time_embed = nn.Linear(time_features, d_model, bias=False) if time_features else None
        self.positions = PositionalEncoding(d_model, dropout, max_len)
        residual = RESIDUALS[norm]
        final = (lambda: nn.LayerNorm(d_model)) if norm == "pre" else (lambda: None)
        layer = dict(
            d_model=d_model,
            num_heads=num_heads,
            d_ff=d_ff,
            dropout=dropout,
            attention_dropout=attention_dropout,
            activation_dropout=activation_dropout,
            residual=residual,
            activation=activation,
        )
        self.encoder = Encoder([EncoderLayer(**layer) for _ in range(num_encoder_layers)], final())
        self.decoder = Decoder([DecoderLayer(**layer) for _ in range(num_decoder_layers)], final())
        self.project = nn.Linear(d_model, self.targets * self.outputs)

    def embed(self, values: Tensor, times: Tensor | None) -> Tensor:
        """values (B, T, C); times (B, T, skip_features + time_features)."""
        h = self.value_embed(values)  # (B, T, D)
        if self.time_embed is not None and times is not None:
            h = h + self.time_embed(times[..., self.skip_features :])
        return self.positions(h)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        """Args: x (B, L, C); x_time (B, L, S + F); y_time (B, H, S + F), S = skip_features,
        F = time_features. Returns:
        (B, H, targets, 1 + Q)
        and, if asked, the last decoder layer's cross-attention weights (B, heads, K + H, L)."""
        stats = None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)
        K, H = self.label_length, self.horizon
        memory, _ = self.encoder(self.embed(x, x_time), None)  # (B, L, D)
        dec_values = torch.cat(
            [x[:, x.shape[1] - K :], x.new_zeros(x.shape[0], H, x.shape[2])], 1
        )  # (B, K + H, C)
        dec_times = None
        if x_time is not None and y_time is not None:
            dec_times = torch.cat(
                [x_time[:, x_time.shape[1] - K :], y_time], 1
            )  # (B, K + H, S + F)
        cache = self.decoder.init_cache(memory, None)
        mask = subsequent_mask(K + H, device=x.device)  # (1, K + H, K + H)
        out = self.decoder(self.embed(dec_values, dec_times), cache, mask, need_weights)
        y = self.project(out.hidden[:, K:])  # (B, H, C · (1 + Q))
        y = ordered(y.view(*y.shape[:2], -1, self.outputs))  # (B, H, C, 1 + Q)
        y = finish(y, self.revin, stats)
        return y, (out.cross_weights[-1] if need_weights else None)
