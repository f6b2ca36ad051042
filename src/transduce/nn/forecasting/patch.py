"""The patch Transformer (PatchTST, Nie et al. 2023): each channel's window cut into
patches, an encoder over the patches of one channel at a time, a linear head to the horizon;
and its residual-attention and batch-norm layers, which the channel model shares.

Every forecaster maps an input window to the whole horizon at once:
``forward(x, x_time, y_time, need_weights=False) -> (forecast, weights)``, the forecast
(B, H, C, 1 + Q): the point forecast, then Q quantiles (see
:mod:`transduce.nn.forecasting.quantiles`).

Legend: B batch, L input length, H horizon, C channels, D d_model, N patches, Q quantile
levels.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from transduce.nn.builders import RESIDUALS
from transduce.nn.dropout import Dropout, dropout
from transduce.nn.forecasting.norms import finish, instance_norm
from transduce.nn.forecasting.quantiles import ordered
from transduce.nn.layers import EncoderLayer
from transduce.nn.transformer import Encoder


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
        h = self.dropout.add(x, y)  # (B, N, D)
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
    ``time_features`` F > 0 (the columns of y_time after the first ``skip_features``: the
    calendar, unless skipped, and known-future covariates), one linear map, shared by the
    channels, adds their effect from the horizon's H × F features. With
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
        time_features: int = 0,
        skip_features: int = 0,
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
        self.skip_features = skip_features
        self.future = (
            nn.Linear(horizon * time_features, horizon * self.outputs) if time_features else None
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
            features = y_time[..., self.skip_features :]  # (B, H, F)
            y = y + self.future(features.flatten(1)).view(B, -1, 1, self.outputs)
        last = weights[-1] if need_weights else None  # (B·C, heads, N, N): patches over patches
        if last is not None:
            last = last.view(B, C, *last.shape[1:])  # (B, C, heads, N, N)
        return finish(ordered(y), self.revin, stats), last
