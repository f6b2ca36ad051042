"""Attention scoring and masking (d2l ch. 11; Vaswani et al. 2017, §3.2.1).

Shape legend, batch-first everywhere:
    B batch   Q queries   K keys (= values)   S source length   T target length
    H heads   Dh head size   D model size (d_model)

Masks are boolean and broadcastable to the scores (..., Q, K): True means "may attend".
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from transduce.nn.dropout import Dropout, dropout


def lengths_to_mask(valid_lens: Tensor, num_keys: int) -> Tensor:
    """Turn valid lengths into a boolean key mask.

    Args:
        valid_lens: (B,) one length per row, or (B, Q) one length per query.
        num_keys: K, the number of keys.

    Returns:
        (B, 1, K) for per-row lengths, (B, Q, K) for per-query lengths; True for keys before
        the valid length.
    """
    positions = torch.arange(num_keys, device=valid_lens.device)  # (K,)
    if valid_lens.dim() == 1:
        return positions < valid_lens[:, None, None]  # (B, 1, K)
    return positions < valid_lens[..., None]  # (B, Q, K)


def masked_softmax(
    scores: Tensor, valid_lens: Tensor | None = None, mask: Tensor | None = None
) -> Tensor:
    """Softmax over the last axis that gives masked keys exactly zero weight.

    Args:
        scores: (..., Q, K) attention scores.
        valid_lens: (B,) or (B, Q) valid key counts, as in :func:`lengths_to_mask`.
        mask: boolean, broadcastable to ``scores``; True keeps a key. Or floating-point
            gates g ≥ 0 that weigh each key: weight ∝ g·exp(score), so 0 drops a key and 1
            keeps it as a boolean mask would, and the gradient reaches every gate, dropped
            ones included (a sampled mask trained straight-through, as in
            :class:`transduce.nn.forecasting.channel.ChannelMask`). Give at most one of
            ``valid_lens`` and ``mask``.

    Returns:
        (..., Q, K) weights; each row sums to 1 over its unmasked keys. A fully masked row is
        all zeros (not NaN), so padding queries cannot poison a batch.
    """
    if valid_lens is not None and mask is not None:
        raise ValueError("give valid_lens or mask, not both")
    if valid_lens is not None:
        mask = lengths_to_mask(valid_lens, scores.shape[-1])
    if mask is None:
        return torch.softmax(scores, dim=-1)
    if mask.is_floating_point():
        # In float32, shifted by the highest score among the kept keys (a constant for the
        # gradient), so that the kept keys cannot all underflow. A dropped key scoring far
        # above them has its exponent capped: it has no weight, and its gate's gradient
        # stays finite. A row whose gates are all zero stays zero, divided by 1 rather than
        # by its zero sum, so that its gradient stays finite too.
        given = scores.dtype
        scores = scores.to(torch.promote_types(given, torch.float32))
        top = scores.masked_fill(mask <= 0, float("-inf")).amax(-1, keepdim=True)
        top = torch.where(torch.isfinite(top), top, scores.amax(-1, keepdim=True)).detach()
        weighted = torch.exp((scores - top).clamp(max=30.0)) * mask
        total = weighted.sum(-1, keepdim=True)
        return (weighted / torch.where(total > 0, total, torch.ones_like(total))).to(given)
    # The most negative finite value, not -inf: a fully masked row then softmaxes to a finite
    # uniform row instead of NaN, and multiplying by the mask zeroes it (and every masked key).
    filled = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(filled, dim=-1) * mask


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
    training: bool = False,
) -> tuple[Tensor, Tensor]:
    """softmax(QKᵀ/√d_k)V with explicit weights (paper eq. 1).

    This is the explicit path: slower than ``F.scaled_dot_product_attention`` but it returns
    the weights, which the visualisations and tests need.

    Args:
        query: (..., Q, d_k).
        key: (..., K, d_k).
        value: (..., K, d_v).
        mask: broadcastable to (..., Q, K), as in :func:`masked_softmax`: boolean (True
            keeps a key) or floating-point gates.
        dropout_p: dropout on the weights, applied only when ``training``.

    Returns:
        output (..., Q, d_v) and weights (..., Q, K) before dropout.
    """
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (..., Q, K)
    weights = masked_softmax(scores, mask=mask)
    dropped = dropout(weights, dropout_p, training)
    return dropped @ value, weights  # (..., Q, d_v), (..., Q, K)


class ScaledDotProductAttention(nn.Module):
    """Scaled dot-product scoring for queries and keys of the same size d_k.

    Args:
        dropout: dropout on the attention weights during training.
    """

    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = dropout

    def forward(
        self,
        queries: Tensor,
        keys: Tensor,
        values: Tensor,
        valid_lens: Tensor | None = None,
        mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Args: queries (B, Q, d_k), keys (B, K, d_k), values (B, K, d_v), and a mask as in
        :func:`masked_softmax`. Returns: output (B, Q, d_v) and, if asked, weights (B, Q, K)."""
        if valid_lens is not None:
            mask = lengths_to_mask(valid_lens, keys.shape[-2])
        output, weights = scaled_dot_product_attention(
            queries, keys, values, mask, self.dropout, self.training
        )
        return output, (weights if need_weights else None)


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) scoring: w_vᵀ tanh(W_q q + W_k k), for queries and keys of any sizes.

    Args:
        query_size: size of each query vector.
        key_size: size of each key vector.
        num_hiddens: size of the hidden layer of the scoring MLP.
        dropout: dropout on the attention weights during training.
    """

    def __init__(
        self, *, query_size: int, key_size: int, num_hiddens: int, dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = Dropout(dropout)

    def forward(
        self,
        queries: Tensor,
        keys: Tensor,
        values: Tensor,
        valid_lens: Tensor | None = None,
        mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Args: queries (B, Q, query_size), keys (B, K, key_size), values (B, K, d_v), and a
        mask as in :func:`masked_softmax`. Returns: output (B, Q, d_v) and, if asked, weights
        (B, Q, K)."""
        q, k = self.W_q(queries), self.W_k(keys)  # (B, Q, h), (B, K, h)
        features = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))  # (B, Q, K, h)
        scores = self.w_v(features).squeeze(-1)  # (B, Q, K)
        weights = masked_softmax(scores, valid_lens, mask)
        output = self.dropout(weights) @ values  # (B, Q, d_v)
        return output, (weights if need_weights else None)
