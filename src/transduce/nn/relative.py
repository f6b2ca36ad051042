"""Relative positions in self-attention: a learned score for each head and each signed
distance from the query to the key, clipped at ±``window`` (Shaw et al. 2018's clipped
relative positions, as a scalar a head like T5's bias). The sign is kept, so a head can
tell the word before from the word after, which sinusoidal positions added to the input
show attention only weakly (Yan et al. 2019, TENER).

The score b enters as a gate exp(b) on each key (:func:`~transduce.nn.attention.masked_softmax`:
weight ∝ gate·exp(q·k/√d)), which is the same as adding b to the score; padding keys get
gate 0.

Legend: B batch, L tokens, H heads, R = 2·window + 1 distances.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class RelativePositions(nn.Module):
    """Per head, a learned score of each distance key − query in [−window, window] (a
    distance beyond counts as ±window). Starts at zero: attention as without it.

    Args:
        num_heads: H.
        window: the farthest distance told apart.
    """

    def __init__(self, *, num_heads: int, window: int) -> None:
        super().__init__()
        if window < 1:
            raise ValueError(f"window must be at least 1, not {window}")
        self.window = window
        self.scores = nn.Parameter(torch.zeros(num_heads, 2 * window + 1))  # (H, R)

    def forward(self, mask: Tensor) -> Tensor:
        """mask (B, 1, L), True at real keys → gates (B, H, L, L): exp of each head's score
        of the key's distance from the query, 0 at padding keys."""
        length = mask.shape[-1]
        at = torch.arange(length, device=mask.device)
        distance = (at[None, :] - at[:, None]).clamp(-self.window, self.window)  # (L, L)
        scores = self.scores[:, distance + self.window]  # (H, L, L)
        return scores.exp().unsqueeze(0) * mask.unsqueeze(1)  # (B, H, L, L)
