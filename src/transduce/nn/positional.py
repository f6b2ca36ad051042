"""Sinusoidal positional encoding and scaled token embeddings (Vaswani et al. 2017, §3.4–3.5)."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from transduce.nn.dropout import Dropout


def sinusoidal_table(max_len: int, d_model: int) -> Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(same angle).

    Returns:
        (max_len, d_model) float32 table; row 0 is [0, 1, 0, 1, …]. Computed in float64 so
        that large positions keep their precision before the cast.
    """
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(D/2),)
    angles = position / 10000.0 ** (two_i / d_model)  # (L, ceil(D/2))
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return table.float()


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal table to embeddings, then applies dropout (paper §5.4).

    Args:
        d_model: D.
        dropout: dropout on the sum of embeddings and positions.
        max_len: longest sequence (offset + length) it can encode.
    """

    def __init__(self, d_model: int, dropout: float = 0.0, max_len: int = 1024) -> None:
        super().__init__()
        self.dropout = Dropout(dropout)
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Args: x (B, L, D); offset, the position of x[:, 0] (non-zero in cached decoding).
        Returns: (B, L, D)."""
        end = offset + x.shape[1]
        if end > self.table.shape[0]:
            raise ValueError(
                f"sequence reaches position {end} but the positional table holds "
                f"{self.table.shape[0]}; build the model with a larger max_len"
            )
        return self.dropout(x + self.table[offset:end].to(x.dtype))  # (B, L, D)


class TokenEmbedding(nn.Module):
    """Token embeddings multiplied by √d_model (paper §3.4).

    The weight is initialised N(0, d_model^-0.5), so scaled embeddings have unit variance and,
    when tied to the output layer, the initial logits stay small.

    Args:
        vocab_size: V.
        d_model: D.
        padding_idx: id whose embedding is zero and receives no gradient.
    """

    def __init__(self, vocab_size: int, d_model: int, padding_idx: int | None = None) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        nn.init.normal_(self.embedding.weight, mean=0.0, std=d_model**-0.5)
        if padding_idx is not None:
            with torch.no_grad():
                self.embedding.weight[padding_idx].zero_()
        self.scale = math.sqrt(d_model)

    @property
    def weight(self) -> nn.Parameter:
        return self.embedding.weight

    def forward(self, tokens: Tensor) -> Tensor:
        """Args: tokens (B, L) ids. Returns: (B, L, D)."""
        return self.embedding(tokens) * self.scale
