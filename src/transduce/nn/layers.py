"""Encoder and decoder layers (Vaswani et al. 2017, §3.1, §3.3, §5.4).

Each sub-layer is wrapped in a residual connection with LayerNorm. The paper's placement,
LayerNorm(x + Dropout(Sublayer(x))), is :class:`PostNorm`; :class:`PreNorm` normalises the
sub-layer input instead (x + Dropout(Sublayer(LayerNorm(x)))), which trains deep stacks
without warm-up. The builder chooses one; the layers do not know which they got.

Legend: B batch, S source length, T new target positions, P cached positions, D d_model.
"""

from __future__ import annotations

from typing import Any, Callable

import torch.nn.functional as F
from torch import Tensor, nn

from transduce.nn.cache import LayerCache
from transduce.nn.dropout import Dropout
from transduce.nn.multi_head_attention import MultiHeadAttention

Sublayer = Callable[[Tensor], tuple[Tensor, Any]]


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W1 + b1) W2 + b2, applied to each position alike (§3.3).

    Args:
        d_model: D. d_ff: inner size. dropout: on the hidden activations (0 in the paper).
        activation: "relu" (the paper's max(0, ·)) or "gelu" (as in BERT and PatchTST).
    """

    def __init__(
        self, *, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"
    ) -> None:
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = Dropout(dropout)
        self.activation = ACTIVATIONS[activation]

    def forward(self, x: Tensor) -> Tensor:
        """(B, L, D) → (B, L, D)."""
        return self.w_2(self.dropout(self.activation(self.w_1(x))))


class PostNorm(nn.Module):
    """The paper's residual: LayerNorm(x + Dropout(Sublayer(x)))."""

    def __init__(self, d_model: int, dropout: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, sublayer: Sublayer) -> tuple[Tensor, Any]:
        """Returns the new x and whatever else the sub-layer returned (weights, cache)."""
        y, extra = sublayer(x)
        return self.norm(self.dropout.add(x, y)), extra


class PreNorm(nn.Module):
    """The pre-norm residual: x + Dropout(Sublayer(LayerNorm(x)))."""

    def __init__(self, d_model: int, dropout: float) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor, sublayer: Sublayer) -> tuple[Tensor, Any]:
        """Returns the new x and whatever else the sub-layer returned (weights, cache)."""
        y, extra = sublayer(self.norm(x))
        return self.dropout.add(x, y), extra


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each inside a residual (§3.1).

    Args:
        d_model, num_heads, d_ff: sizes. dropout: residual dropout (P_drop).
        attention_dropout, activation_dropout: dropout on attention weights and FFN hidden.
        residual: :class:`PostNorm` (paper) or :class:`PreNorm`.
        activation: the feed-forward's, "relu" (paper) or "gelu".
    """

    def __init__(
        self,
        *,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        residual: type[nn.Module] = PostNorm,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model=d_model, num_heads=num_heads, dropout=attention_dropout
        )
        self.ffn = PositionwiseFeedForward(
            d_model=d_model, d_ff=d_ff, dropout=activation_dropout, activation=activation
        )
        self.residuals = nn.ModuleList(residual(d_model, dropout) for _ in range(2))

    def forward(
        self, x: Tensor, mask: Tensor | None, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Args: x (B, S, D); mask (B, 1, S). Returns: x (B, S, D), weights (B, H, S, S)|None."""
        x, weights = self.residuals[0](x, lambda h: self.self_attn(h, h, h, mask, need_weights))
        x, _ = self.residuals[1](x, lambda h: (self.ffn(h), None))
        return x, weights


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder–decoder attention, feed-forward (§3.1).

    Keys/values come from and go to a :class:`LayerCache`, so a full pass over a target and
    an incremental step run the same code: a full pass is one step of T positions.

    Args: as :class:`EncoderLayer`.
    """

    def __init__(
        self,
        *,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        attention_dropout: float = 0.0,
        activation_dropout: float = 0.0,
        residual: type[nn.Module] = PostNorm,
        activation: str = "relu",
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(
            d_model=d_model, num_heads=num_heads, dropout=attention_dropout
        )
        self.cross_attn = MultiHeadAttention(
            d_model=d_model, num_heads=num_heads, dropout=attention_dropout
        )
        self.ffn = PositionwiseFeedForward(
            d_model=d_model, d_ff=d_ff, dropout=activation_dropout, activation=activation
        )
        self.residuals = nn.ModuleList(residual(d_model, dropout) for _ in range(3))

    def forward(
        self,
        x: Tensor,
        cache: LayerCache,
        memory_mask: Tensor | None,
        self_mask: Tensor | None,
        need_weights: bool = False,
    ) -> tuple[Tensor, LayerCache, tuple[Tensor | None, Tensor | None]]:
        """
        Args:
            x: (B, T, D) the new target positions.
            cache: this layer's cache (cross keys/values, and P earlier positions).
            memory_mask: (B, 1, S) source mask. self_mask: (B|1, T, P + T) causal mask.

        Returns:
            x (B, T, D), the cache extended by T positions, and (self, cross) weights
            (B, H, T, P + T) and (B, H, T, S) when asked for.
        """
        x, (self_w, cache) = self.residuals[0](
            x, lambda h: self._self_attention(h, cache, self_mask, need_weights)
        )
        x, cross_w = self.residuals[1](
            x,
            lambda h: self.cross_attn.attend(
                h, cache.cross_keys, cache.cross_values, memory_mask, need_weights
            ),
        )
        x, _ = self.residuals[2](x, lambda h: (self.ffn(h), None))
        return x, cache, (self_w, cross_w)

    def _self_attention(
        self, h: Tensor, cache: LayerCache, mask: Tensor | None, need_weights: bool
    ) -> tuple[Tensor, tuple[Tensor | None, LayerCache]]:
        cache = cache.extend(*self.self_attn.project_kv(h, h))  # keys/values (B, H, P + T, Dh)
        out, weights = self.self_attn.attend(
            h, cache.self_keys, cache.self_values, mask, need_weights
        )
        return out, (weights, cache)
