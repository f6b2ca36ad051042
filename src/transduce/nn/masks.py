"""Padding and subsequent (causal) masks; True means "may attend" (see nn.attention)."""

from __future__ import annotations

import torch
from torch import Tensor


def padding_mask(tokens: Tensor, pad_id: int) -> Tensor:
    """Args: tokens (B, L). Returns: (B, 1, L), True at real tokens; broadcasts over queries."""
    return (tokens != pad_id).unsqueeze(1)  # (B, 1, L)


def subsequent_mask(size: int, offset: int = 0, device: torch.device | None = None) -> Tensor:
    """Causal mask for ``size`` new queries that follow ``offset`` cached positions.

    Query i (at position offset + i) may attend to keys 0 … offset + i, never to later ones.

    Returns:
        (1, size, offset + size) boolean.
    """
    query_pos = torch.arange(offset, offset + size, device=device)[:, None]  # (T, 1)
    key_pos = torch.arange(offset + size, device=device)[None, :]  # (1, P + T)
    return (key_pos <= query_pos).unsqueeze(0)  # (1, T, P + T)
