"""Forecasters: the paper's encoder–decoder on series and a patch encoder, and what every
forecaster shares: instance normalisation, the ensemble (the encoder across channels is in
:mod:`transduce.nn.forecasting.channel`, the baselines in
:mod:`transduce.nn.forecasting.baselines`).

Every model maps an input window to the whole horizon at once:
``forward(x, x_time, y_time, need_weights=False) -> (forecast, cross_weights)``, the
forecast (B, H, C, 1 + Q): the point forecast, then Q quantiles at the levels the model was
built with (see :mod:`transduce.nn.forecasting.quantiles`; the baselines have none).

Legend: B batch, L input length, H horizon, C channels, D d_model, N patches,
K label (known) length fed to the decoder, Q quantile levels.
"""

# size: the two encoder models share RevIN, the ensemble and their heads

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from transduce.nn.builders import RESIDUALS
from transduce.nn.dropout import Dropout, dropout
from transduce.nn.forecasting.quantiles import ordered
from transduce.nn.layers import DecoderLayer, EncoderLayer
from transduce.nn.masks import subsequent_mask
from transduce.nn.positional import PositionalEncoding
from transduce.nn.transformer import Decoder, Encoder

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


class PostBatchNorm(nn.Module):
    """BatchNorm(x + Dropout(Sublayer(x))): the paper's residual with batch statistics over
    the features instead of LayerNorm, as PatchTST normalises its patch encoder (series
    windows are short and their positions alike, so batch statistics are stable)."""

    def __init__(self, d_model: int, dropout: float) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, sublayer):
        y, extra = sublayer(x)
        h = x + self.dropout(y)  # (B, N, D)
        return self.norm(h.transpose(1, 2)).transpose(1, 2), extra


PATCH_RESIDUALS = {**RESIDUALS, "batch": PostBatchNorm}


class ResidualAttentionLayer(EncoderLayer):
    """An encoder layer whose attention scores carry the previous layer's (He et al. 2020,
    RealFormer; PatchTST's ``res_attention``, on in its reference code): layer l attends with
    softmax(S_l) V, S_l = Q_l K_lᵀ / √d_h + S_{l−1}, so each layer starts from where the
    one below it looked. The scores are computed explicitly (the fused kernel does not return
    them). ``forward(x, prior) -> (x, S_l)``, S (B, H, N, N); the first layer's prior is None.
    """

    def forward(self, x: Tensor, prior: Tensor | None = None) -> tuple[Tensor, Tensor]:
        attn = self.self_attn

        def attend(h: Tensor) -> tuple[Tensor, Tensor]:
            q, k, v = (
                attn.split_heads(proj(h)) for proj in (attn.q_proj, attn.k_proj, attn.v_proj)
            )  # (B, H, N, Dh)
            scores = q @ k.transpose(-2, -1) / math.sqrt(attn.head_size)  # (B, H, N, N)
            if prior is not None:
                scores = scores + prior
            weights = dropout(torch.softmax(scores, -1), attn.dropout, self.training)
            return attn.out_proj(attn.merge_heads(weights @ v)), scores

        x, scores = self.residuals[0](x, attend)
        x, _ = self.residuals[1](x, lambda h: (self.ffn(h), None))
        return x, scores


class ResidualAttentionEncoder(Encoder):
    """A stack of :class:`ResidualAttentionLayer` handing each layer's scores to the next;
    called as :class:`~transduce.nn.transformer.Encoder` is (no mask: patches are all
    real), it returns no weights."""

    def forward(
        self, x: Tensor, mask: Tensor | None = None, need_weights: bool = False
    ) -> tuple[Tensor, list[None]]:
        if mask is not None:
            raise ValueError("ResidualAttentionEncoder takes no mask")
        scores = None
        for layer in self.layers:
            x, scores = layer(x, scores)
        return (self.norm(x) if self.norm is not None else x), [None] * len(self.layers)


def cut_patches(series: Tensor, patch_len: int, stride: int) -> Tensor:
    """(B, C, L) → (B, C, N, P): windows of ``patch_len`` steps every ``stride`` steps after
    the end is extended by ``stride`` repeats of the last value, N = (L − P) // S + 2."""
    padded = F.pad(series, (0, stride), mode="replicate")  # (B, C, L + S)
    return padded.unfold(-1, patch_len, stride)


class PatchForecaster(nn.Module):
    """A channel-independent Transformer encoder over patches (Nie et al. 2023, PatchTST).

    Each channel's window is cut into N patches of ``patch_len`` steps every ``stride`` steps
    (the end padded by repeating the last value), each patch is embedded linearly with a
    learned position, the encoder runs over the N patches, and a linear head maps all N·D
    features to the horizon. Reversible instance normalisation surrounds it. With
    ``future_features`` F > 0 (known-future covariates, and the calendar), one linear map,
    shared by the channels, adds their effect from the horizon's H × F features. With
    ``residual_attention`` each layer's attention scores add the previous layer's
    (:class:`ResidualAttentionLayer`).
    """

    def __init__(
        self,
        *,
        channels: int,
        input_length: int,
        horizon: int,
        patch_len: int,
        stride: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        num_layers: int,
        dropout: float,
        head_dropout: float = 0.0,
        norm: str = "pre",
        revin: bool = True,
        activation: str = "relu",
        quantiles: tuple[float, ...] = (),
        future_features: int = 0,
        calendar: bool = True,
        revin_center: str = "mean",
        revin_affine: bool = True,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        residual_attention: bool = False,
    ) -> None:
        super().__init__()
        if patch_len > input_length:
            raise ValueError(f"patch_len={patch_len} exceeds input_length={input_length}")
        self.patch_len, self.stride, self.outputs = patch_len, stride, 1 + len(quantiles)
        self.num_patches = (input_length - patch_len) // stride + 2
        self.revin = instance_norm(channels, revin, revin_center, revin_affine)
        self.embed = nn.Linear(patch_len, d_model)
        self.position = nn.Parameter(torch.empty(self.num_patches, d_model).uniform_(-0.02, 0.02))
        self.dropout = Dropout(dropout)
        layer, encoder = (
            (ResidualAttentionLayer, ResidualAttentionEncoder)
            if residual_attention
            else (EncoderLayer, Encoder)
        )
        layers = [
            layer(
                d_model=d_model,
                num_heads=num_heads,
                d_ff=d_ff,
                dropout=dropout,
                attention_dropout=attention_dropout,
                activation_dropout=activation_dropout,
                residual=PATCH_RESIDUALS[norm],
                activation=activation,
            )
            for _ in range(num_layers)
        ]
        self.encoder = encoder(layers, nn.LayerNorm(d_model) if norm == "pre" else None)
        self.head = nn.Sequential(
            nn.Flatten(-2),
            Dropout(head_dropout),
            nn.Linear(self.num_patches * d_model, horizon * self.outputs),
        )
        self.calendar = calendar
        self.future = (
            nn.Linear(horizon * future_features, horizon * self.outputs)
            if future_features
            else None
        )

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        B, L, C = x.shape
        stats = None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)
        patches = cut_patches(x.transpose(1, 2), self.patch_len, self.stride)  # (B, C, N, P)
        patches = patches.reshape(B * C, self.num_patches, self.patch_len)  # (B·C, N, P)
        h = self.dropout(self.embed(patches) + self.position)  # (B·C, N, D)
        h, weights = self.encoder(h, None, need_weights)
        y = self.head(h).view(B, C, -1, self.outputs).transpose(1, 2)  # (B, H, C, 1 + Q)
        if self.future is not None:
            features = y_time if self.calendar else y_time[..., 4:]  # (B, H, F)
            y = y + self.future(features.flatten(1)).view(B, -1, 1, self.outputs)
        last = weights[-1] if need_weights else None  # (B·C, heads, N, N): patches over patches
        if last is not None:
            last = last.view(B, C, *last.shape[1:])  # (B, C, heads, N, N)
        return finish(ordered(y), self.revin, stats), last


class SeriesTransformer(nn.Module):
    """The paper's encoder–decoder applied to series (as in Wu et al. 2020 and Informer).

    Encoder input: a linear embedding of each step's C values, plus sinusoidal positions and
    a linear embedding of its known features (calendar features, optionally, then ``known``
    known-future covariates). Decoder input: the last K known steps followed by H zero
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
        calendar: bool = True,
        norm: str = "post",
        revin: bool = True,
        max_len: int = 4096,
        activation: str = "relu",
        quantiles: tuple[float, ...] = (),
        targets: int | None = None,
        known: int = 0,
        revin_center: str = "mean",
        revin_affine: bool = True,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.horizon, self.label_length = horizon, label_length
        self.outputs, self.targets = 1 + len(quantiles), targets or channels
        self.calendar = calendar
        self.revin = instance_norm(channels, revin, revin_center, revin_affine)
        self.value_embed = nn.Linear(channels, d_model)
        features = (4 if calendar else 0) + known
        self.time_embed = nn.Linear(features, d_model, bias=False) if features else None
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
        """values (B, T, C); times (B, T, 4 + known): calendar features, then covariates."""
        h = self.value_embed(values)  # (B, T, D)
        if self.time_embed is not None and times is not None:
            h = h + self.time_embed(times if self.calendar else times[..., 4:])
        return self.positions(h)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        """Args: x (B, L, C); x_time (B, L, 4 + known); y_time (B, H, 4 + known). Returns:
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
            dec_times = torch.cat([x_time[:, x_time.shape[1] - K :], y_time], 1)  # (B, K + H, 4)
        cache = self.decoder.init_cache(memory, None)
        mask = subsequent_mask(K + H, device=x.device)  # (1, K + H, K + H)
        out = self.decoder(self.embed(dec_values, dec_times), cache, mask, need_weights)
        y = self.project(out.hidden[:, K:])  # (B, H, C · (1 + Q))
        y = ordered(y.view(*y.shape[:2], -1, self.outputs))  # (B, H, C, 1 + Q)
        y = finish(y, self.revin, stats)
        return y, (out.cross_weights[-1] if need_weights else None)


class Ensemble(nn.Module):
    """M forecasters of one shape, trained side by side from different initial weights and
    dropout, forecasting the mean of theirs (a deep ensemble, Lakshminarayanan et al. 2017):
    the mean of M members has less of the variance one training run has across seeds.

    In training mode ``forward`` returns every member's forecast, stacked on the batch axis
    (M·B, H, C, 1 + Q), so that the loss trains each member on its own error (the error of
    the mean would couple them); in eval mode it returns the mean (B, H, C, 1 + Q), whose
    quantiles stay ordered since each member's are, and the members' mean attention.
    """

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        self.members = nn.ModuleList(members)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        outputs = [member(x, x_time, y_time, need_weights) for member in self.members]
        forecasts = torch.stack([y for y, _ in outputs])  # (M, B, H, C, 1 + Q)
        if self.training:
            return forecasts.flatten(0, 1), None
        weights = [w for _, w in outputs if w is not None]
        return forecasts.mean(0), (torch.stack(weights).mean(0) if weights else None)


def finish(y: Tensor, revin: InstanceNorm | None, stats) -> Tensor:
    """Back to the input's units; the quantiles sorted (RevIN's learned scale may be
    negative, which would turn them upside down)."""
    if revin is not None:
        y = revin.denormalise(y, stats)
    if y.shape[-1] > 2:
        y = torch.cat([y[..., :1], y[..., 1:].sort(-1).values], -1)
    return y
