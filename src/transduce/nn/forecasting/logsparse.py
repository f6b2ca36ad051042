"""The LogSparse Transformer (Li et al., NeurIPS 2019, "Enhancing the Locality and Breaking
the Memory Bottleneck of Transformer on Time Series Forecasting").

Two ideas, each a piece here:

- **Convolutional self-attention** (§3.2): queries and keys are a causal 1-D convolution of
  kernel k over the layer's input, so a query at step t compares the *shape* of the k steps
  ending at t with the shapes ending at each earlier step, not single points. Values stay a
  position-wise projection. k = 1 is the canonical attention (a test checks it equals
  :class:`~transduce.nn.multi_head_attention.MultiHeadAttention`).
- **The LogSparse pattern** (§3.3): step l attends to itself and to the steps at distances
  1, 2, 4, …, 2^⌊log₂ l⌋ before it: O(log L) cells per step, O(L log L) per layer; with
  ⌈log₂ L⌉ layers every step still reaches every earlier one, in O(L (log L)²) memory.
  Two variants of the paper's Figure 3: ``local`` (each step attends densely to the w steps
  up to it, then at exponentially growing distances beyond that window) and ``restart``
  (the sequence is cut into subsequences of s steps; within each the pattern restarts from
  its first step, and each subsequence's first step attends with the LogSparse pattern to
  the steps before it, so information crosses subsequences). ``full`` is the causal dense
  mask, for comparison.

The attention is computed on the cells the pattern allows only. A pattern's cells lie at a
few fixed distances back (M of them: 0, 1, 2, 4, …, and a local window's), so the scores at
distance o are the queries against the keys shifted o steps, views of the same tensors:
(B, H, L, M) memory instead of (B, H, L, L), and no gather, whose backward is a scatter.
With the full pattern it falls back to the dense path.

The forecaster is decoder-only, as the paper's: one token per step of the input window and
of the horizon; a context token holds the step's value, a horizon token a placeholder (the
value unknown, a flag set); both hold the calendar and known covariates of their step and a
sinusoidal position. Causal attention (under the chosen pattern) runs over all L + H tokens
and a linear head reads the point forecast and the quantiles at each horizon token, all
steps at once (a direct multi-horizon forecast; the paper rolls its likelihood forward one
step at a time).

Legend: B batch, L input length, H horizon, T = L + H tokens, C channels, D d_model,
M most keys a step may attend to, Dh head size.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from transduce.nn.attention import masked_softmax
from transduce.nn.dropout import Dropout
from transduce.nn.forecasting import fused
from transduce.nn.forecasting.norms import finish, instance_norm
from transduce.nn.forecasting.quantiles import ordered
from transduce.nn.layers import PositionwiseFeedForward
from transduce.nn.positional import sinusoidal_table

PATTERNS = ("logsparse", "local", "restart", "full")


def _exponential(distance_from: int, start: int) -> list[int]:
    """start, start − 1, start − 2, start − 4, … down to ``distance_from`` (inclusive)."""
    cells, step = [], 1
    while start - step >= distance_from:
        cells.append(start - step)
        step *= 2
    return cells


def pattern_keys(
    length: int, pattern: str = "logsparse", window: int = 0, restart: int = 0
) -> list[list[int]]:
    """Each step's allowed earlier steps under ``pattern`` (see :func:`logsparse_mask`),
    without building the (L, L) mask: O(L log L) memory for the sparse patterns."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {', '.join(PATTERNS)}, not {pattern!r}")
    if pattern == "local" and window < 1:
        raise ValueError(f"the local pattern needs a window of at least 1, not {window}")
    if pattern == "restart" and restart < 1:
        raise ValueError(
            f"the restart pattern needs subsequences of at least 1 step, not {restart}"
        )
    rows = []
    for i in range(length):
        if pattern == "full":
            keys = list(range(i + 1))
        elif pattern == "logsparse":
            keys = [i] + _exponential(0, i)
        elif pattern == "local":
            first = max(0, i - window + 1)
            keys = list(range(first, i + 1)) + _exponential(0, first)
        else:
            start = i - i % restart
            keys = [i] + _exponential(start, i) + (_exponential(0, i) if i == start else [])
        rows.append(sorted(keys))
    return rows


def logsparse_mask(
    length: int, pattern: str = "logsparse", window: int = 0, restart: int = 0
) -> Tensor:
    """The (L, L) boolean mask of ``pattern`` (True: row step may attend to column step).

    Args:
        pattern: "logsparse" (itself and 1, 2, 4, … steps back), "local" (the ``window``
            steps up to itself, then 1, 2, 4, … steps back from the window's first step),
            "restart" (LogSparse within subsequences of ``restart`` steps; a subsequence's
            first step also attends LogSparse-wise to the steps before it) or "full"
            (every earlier step).
    """
    mask = torch.zeros(length, length, dtype=torch.bool)
    for i, keys in enumerate(pattern_keys(length, pattern, window, restart)):
        mask[i, keys] = True
    return mask


def key_offsets(mask: Tensor | list[list[int]]) -> tuple[tuple[int, ...], Tensor]:
    """(offsets (M,), valid (L, M)): the distances back at which some step may attend (from a
    mask, or from :func:`pattern_keys`' lists), in increasing order, and for each step which
    of them it may (``valid[i, m]``: step i attends to step i − offsets[m]). Every pattern
    here has few distinct offsets (2 + ⌊log₂(L − 1)⌋ for LogSparse: 0, 1, 2, 4, …; for a
    local window of w: 0 … w − 1, then w − 1 + 1, 2, 4, …), so a step's keys are shifted
    views, not gathered."""
    rows = [row.nonzero().flatten().tolist() for row in mask] if isinstance(mask, Tensor) else mask
    offsets = sorted({i - j for i, row in enumerate(rows) for j in row})
    column = {o: m for m, o in enumerate(offsets)}
    valid = torch.zeros(len(rows), len(offsets), dtype=torch.bool)
    for i, row in enumerate(rows):
        valid[i, [column[i - j] for j in row]] = True
    return tuple(offsets), valid


def _shifted_products(a: Tensor, b: Tensor, offsets: tuple[int, ...]) -> Tensor:
    """(B, H, M, T): a_t · b_{t − offsets[m]}, 0 where t < offsets[m]. Time is the last
    axis of every tensor here (a, b: (B, H, Dh, T)), so each offset's product and its sum
    over Dh run along contiguous rows of T steps."""
    T = a.shape[-1]
    out = a.new_zeros(*a.shape[:-2], len(offsets), T)
    for m, o in enumerate(offsets):
        out[..., m, o:] = (a[..., o:] * b[..., : T - o]).sum(-2)
    return out


def _shifted_sum(w: Tensor, x: Tensor, offsets: tuple[int, ...]) -> Tensor:
    """(B, H, Dh, T): out_t = Σ_m w[m, t] · x_{t − offsets[m]}, each offset added in place
    (w (B, H, M, T), x (B, H, Dh, T))."""
    T = x.shape[-1]
    out = torch.zeros_like(x)
    for m, o in enumerate(offsets):
        out[..., o:].addcmul_(w[..., m, None, o:], x[..., : T - o])
    return out


def _spread_back(w: Tensor, x: Tensor, offsets: tuple[int, ...]) -> Tensor:
    """(B, H, Dh, T): out_s = Σ_m w[m, s + offsets[m]] · x_{s + offsets[m]}, what each step
    gave the steps that read it (the transpose of :func:`_shifted_sum`)."""
    T = x.shape[-1]
    out = torch.zeros_like(x)
    for m, o in enumerate(offsets):
        out[..., : T - o].addcmul_(w[..., m, None, o:], x[..., o:])
    return out


class _ShiftedScores(torch.autograd.Function):
    """scores[..., m, t] = q_t · k_{t − offsets[m]} (0 where t < offsets[m]), and a backward
    that adds each offset's share into the gradients of q and k in place: autograd through
    the slices would build a zero tensor of the whole size for each slice and add them up,
    which took most of a training step."""

    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, offsets: tuple[int, ...]) -> Tensor:
        ctx.save_for_backward(q, k)
        ctx.offsets = offsets
        return _shifted_products(q, k, offsets)

    @staticmethod
    def backward(ctx, grad: Tensor):
        q, k = ctx.saved_tensors
        return _shifted_sum(grad, k, ctx.offsets), _spread_back(grad, q, ctx.offsets), None


class _ShiftedSum(torch.autograd.Function):
    """out_t = Σ_m weights[..., m, t] · v_{t − offsets[m]}, each offset added in place; the
    backward likewise (the weights' gradient is the shifted products of the output's
    gradient with v)."""

    @staticmethod
    def forward(ctx, weights: Tensor, v: Tensor, offsets: tuple[int, ...]) -> Tensor:
        ctx.save_for_backward(weights, v)
        ctx.offsets = offsets
        return _shifted_sum(weights, v, offsets)  # (B, H, Dh, T)

    @staticmethod
    def backward(ctx, grad: Tensor):
        weights, v = ctx.saved_tensors
        dweights = _shifted_products(grad, v, ctx.offsets)
        return dweights, _spread_back(weights, grad, ctx.offsets), None


def _time_last(x: Tensor) -> Tensor:
    """(B, H, T, Dh) → a float32 (B, H, Dh, T) copy, contiguous."""
    return x.transpose(-1, -2).to(torch.float32, memory_format=torch.contiguous_format)


def shifted_attention(
    qk: Tensor, v: Tensor, keys: tuple[tuple[int, ...], Tensor], dropout: nn.Module
) -> Tensor:
    """Attention of each step on the steps ``keys`` (:func:`key_offsets`) allow: fused into
    one pass per sequence by a compiled kernel where it can be had (:mod:`.fused`), else
    :func:`shifted_attention_ops`; both give the same to 1e-5. Args: qk (B, 2, H, T, Dh):
    queries and keys in one tensor, whose gradient comes back whole, in its own layout; v
    (B, H, T, Dh). Returns (B, H, T, Dh)."""
    if not fused.usable(qk, v):
        return shifted_attention_ops(qk, v, keys, dropout)
    return fused.fused_attention(qk, v, keys, dropout.p if dropout.training else 0.0)


def shifted_attention_ops(
    qk: Tensor, v: Tensor, keys: tuple[tuple[int, ...], Tensor], dropout: nn.Module
) -> Tensor:
    """:func:`shifted_attention` in PyTorch's operations, from shifted views of the keys
    and values: the score of step t at offset o is q_t · k_{t−o}, read off ``q[o:]`` and
    ``k[:T − o]`` (views, so neither a gathered copy nor a scatter in the backward), and
    the output sums ``weights[o:, m] · v[:T − o]`` the same way. Memory: the (B, H, M, T)
    scores and weights, and one (B, H, Dh, T) product at a time.

    Inside, time is the last axis: with the M offsets (or Dh) last, the softmax and the
    products ran along rows of 9 to 16 numbers, and on a Zen 5 the training step of M4
    Hourly's LogSparse model took 17% longer in bf16 (7% in float32).
    Args: qk (B, 2, H, T, Dh), v (B, H, T, Dh). Returns (B, H, T, Dh)."""
    offsets, valid = keys
    q, k = qk.unbind(1)
    given = v.dtype  # in float32: PyTorch's bfloat16 addcmul_ on a CPU ran 3× slower
    q, k, v = (_time_last(x) for x in (q, k, v))  # (B, H, Dh, T) each
    scores = _ShiftedScores.apply(q, k, offsets) / math.sqrt(q.shape[-2])  # (B, H, M, T)
    # every step attends at least to itself (offset 0), so no column is wholly masked
    scores = scores.masked_fill(~valid.t(), float("-inf"))
    weights = dropout(torch.softmax(scores, dim=-2))
    return _ShiftedSum.apply(weights, v, offsets).transpose(-1, -2).to(given)  # (B, H, T, Dh)


class ConvSelfAttention(nn.Module):
    """Multi-head causal self-attention whose queries and keys are a causal convolution of
    kernel ``kernel`` over the input (Li et al. 2019, §3.2), under a sparse pattern.

    Args:
        d_model: D. num_heads: H (divides D). kernel: k ≥ 1 (1: canonical attention).
        dropout: on the attention weights in training.
    """

    def __init__(
        self, *, d_model: int, num_heads: int, kernel: int = 1, dropout: float = 0.0
    ) -> None:
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        if kernel < 1:
            raise ValueError(f"the kernel must be at least 1, not {kernel}")
        self.num_heads, self.head_size, self.kernel = num_heads, d_model // num_heads, kernel
        self.q_conv = nn.Conv1d(d_model, d_model, kernel)
        self.k_conv = nn.Conv1d(d_model, d_model, kernel)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.dropout = Dropout(dropout)

    def _heads(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.head_size).transpose(1, 2)  # (B, H, T, Dh)

    def _queries_and_keys(self, x: Tensor) -> Tensor:
        """The causal convolutions of queries and keys, as one convolution of both weights
        over one padded copy of the input (half the calls and copies of two): step t sees
        steps t − k + 1 … t. Returns qk (B, 2, H, T, Dh), time last behind the view."""
        B, T, _ = x.shape
        padded = F.pad(x.transpose(1, 2), (self.kernel - 1, 0))  # (B, D, k − 1 + T)
        weight = torch.cat([self.q_conv.weight, self.k_conv.weight])  # (2D, D, k)
        both = F.conv1d(padded, weight, torch.cat([self.q_conv.bias, self.k_conv.bias]))
        return both.view(B, 2, self.num_heads, self.head_size, T).transpose(-1, -2)

    def forward(
        self,
        x: Tensor,
        mask: Tensor,
        keys: tuple[Tensor, Tensor] | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Args: x (B, T, D); mask (T, T) boolean, True: may attend (causal); ``keys``: the
        mask's :func:`key_offsets`, to attend on those cells only (sparse).
        Returns: (B, T, D) and, if asked, the weights (B, H, T, T)."""
        qk = self._queries_and_keys(x)  # (B, 2, H, T, Dh)
        v = self._heads(self.v_proj(x))
        scale = math.sqrt(self.head_size)
        if keys is None or need_weights:
            q, k = qk.unbind(1)
            scores = q @ k.transpose(-2, -1) / scale  # (B, H, T, T)
            weights = self.dropout(masked_softmax(scores, mask=mask))
            out = weights @ v
        else:
            out, weights = shifted_attention(qk, v, keys, self.dropout), None
        B, H, T, Dh = out.shape
        out = self.out_proj(out.transpose(1, 2).reshape(B, T, H * Dh))
        return out, (weights if need_weights else None)


class LogSparseLayer(nn.Module):
    """Pre-norm residual blocks: convolutional self-attention, then the feed-forward."""

    def __init__(
        self, *, d_model: int, num_heads: int, d_ff: int, kernel: int, dropout: float
    ) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attention = ConvSelfAttention(
            d_model=d_model, num_heads=num_heads, kernel=kernel, dropout=dropout
        )
        self.ffn = PositionwiseFeedForward(d_model=d_model, d_ff=d_ff, dropout=dropout)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, mask: Tensor, keys, need_weights: bool = False):
        h, weights = self.attention(self.norm1(x), mask, keys, need_weights)
        x = self.dropout.add(x, h)
        return self.dropout.add(x, self.ffn(self.norm2(x))), weights


class LogSparseForecaster(nn.Module):
    """The decoder-only LogSparse Transformer as a forecaster of the library's interface:
    ``forward(x (B, L, C), x_time (B, L, F), y_time (B, H, F))`` → ((B, H, C, 1 + Q), the
    last layer's weights if asked). Each channel is a series of its own (the weights are
    shared), inside reversible instance normalisation unless ``revin`` is off (a caller that
    scales each series itself, as the global task does, turns it off).
    """

    def __init__(
        self,
        *,
        channels: int,
        input_length: int,
        horizon: int,
        d_model: int,
        num_heads: int,
        d_ff: int,
        num_layers: int,
        dropout: float,
        kernel: int = 1,
        pattern: str = "logsparse",
        window: int = 0,
        restart: int = 0,
        time_features: int = 0,
        skip_features: int = 0,
        quantiles: tuple[float, ...] = (),
        revin: bool = True,
        revin_center: str = "mean",
        revin_affine: bool = True,
        sparse: bool = True,
    ) -> None:
        super().__init__()
        self.input_length, self.horizon = input_length, horizon
        self.outputs = 1 + len(quantiles)
        # x_time/y_time: skip_features columns not read (the calendar, if off), then those read
        self.time_features, self.first_feature = time_features, skip_features
        self.revin = instance_norm(channels, revin, revin_center, revin_affine)
        T = input_length + horizon
        mask = logsparse_mask(T, pattern, window, restart)
        self.register_buffer("mask", mask, persistent=False)
        self.offsets, valid = key_offsets(mask)
        self.register_buffer("valid", valid, persistent=False)
        self.sparse = sparse and pattern != "full"
        self.register_buffer("positions", sinusoidal_table(T, d_model), persistent=False)
        self.embed = nn.Linear(2 + time_features, d_model)  # value, "unknown" flag, features
        self.dropout = Dropout(dropout)
        self.layers = nn.ModuleList(
            LogSparseLayer(
                d_model=d_model, num_heads=num_heads, d_ff=d_ff, kernel=kernel, dropout=dropout
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, self.outputs)

    def forward(self, x, x_time=None, y_time=None, need_weights=False):
        B, L, C = x.shape
        H = self.horizon
        stats = None
        if self.revin is not None:
            x, stats = self.revin.normalise(x)
        series = x.transpose(1, 2).reshape(B * C, L, 1)  # (B·C, L, 1)
        values = torch.cat([series, series.new_zeros(B * C, H, 1)], 1)  # (B·C, T, 1)
        unknown = torch.cat([series.new_zeros(B * C, L, 1), series.new_ones(B * C, H, 1)], 1)
        parts = [values, unknown]
        if self.time_features:
            times = torch.cat([x_time, y_time], 1)[..., self.first_feature :]  # (B, T, F)
            parts.append(times.repeat_interleave(C, 0).to(series.dtype))
        h = self.embed(torch.cat(parts, -1)) + self.positions.to(series.dtype)  # (B·C, T, D)
        h = self.dropout(h)
        keys = (self.offsets, self.valid) if self.sparse else None
        weights = None
        for layer in self.layers:
            h, weights = layer(h, self.mask, keys, need_weights)
        y = self.head(self.norm(h[:, L:]))  # (B·C, H, 1 + Q)
        y = y.view(B, C, H, self.outputs).transpose(1, 2)  # (B, H, C, 1 + Q)
        if weights is not None:
            weights = weights.view(B, C, *weights.shape[1:])  # (B, C, heads, T, T)
        return finish(ordered(y), self.revin, stats), weights
