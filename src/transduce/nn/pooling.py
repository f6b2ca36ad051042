"""Nadaraya–Watson attention pooling (Nadaraya 1964, Watson 1964; d2l §11.2).

f(x) = Σ_i softmax_i(-((x - x_i)·w)² / 2) · y_i : the query x attends to keys x_i and pools
their values y_i with a Gaussian kernel. The non-parametric form fixes the width; the
parametric form learns w.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transduce.nn.attention import masked_softmax


def gaussian_pooling(
    queries: Tensor,
    keys: Tensor,
    values: Tensor,
    width: Tensor | float,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Gaussian-kernel attention pooling.

    Args:
        queries: (..., Q) scalar queries.
        keys: (..., K) scalar keys.
        values: (..., K) scalar values, or (..., K, Dv) vectors.
        width: w, the inverse kernel width (a float or a scalar tensor).
        mask: boolean, broadcastable to (..., Q, K); True keeps a key.

    Returns:
        pooled values (..., Q) or (..., Q, Dv), and the weights (..., Q, K).
    """
    distances = queries.unsqueeze(-1) - keys.unsqueeze(-2)  # (..., Q, K)
    weights = masked_softmax(-((distances * width) ** 2) / 2, mask=mask)  # (..., Q, K)
    if values.dim() == keys.dim():
        return (weights @ values.unsqueeze(-1)).squeeze(-1), weights  # (..., Q)
    return weights @ values, weights  # (..., Q, Dv)


class NadarayaWatson(nn.Module):
    """Non-parametric Nadaraya–Watson regression: a fixed Gaussian kernel of width 1/w.

    Args:
        width: w in the kernel exp(-((x - x_i)·w)² / 2); 1.0 is the standard Gaussian.
    """

    def __init__(self, width: float = 1.0) -> None:
        super().__init__()
        self.width = width

    def forward(
        self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """See :func:`gaussian_pooling` for shapes."""
        return gaussian_pooling(queries, keys, values, self.width, mask)


class LearnedNadarayaWatson(nn.Module):
    """Parametric Nadaraya–Watson regression: the kernel width w is a learned parameter.

    Args:
        init_width: starting value of w.
    """

    def __init__(self, init_width: float = 1.0) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor(float(init_width)))

    def forward(
        self, queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """See :func:`gaussian_pooling` for shapes."""
        return gaussian_pooling(queries, keys, values, self.w, mask)
