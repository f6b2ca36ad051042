"""Label-smoothed cross-entropy (Szegedy et al. 2016; Vaswani et al. 2017, §5.4)."""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn


class LabelSmoothedCrossEntropy(nn.Module):
    """Cross-entropy against q = (1 − ε)·onehot(y) + ε/V, skipping padding targets.

    The smoothing mass ε is spread uniformly over all V classes, as in PyTorch's
    ``F.cross_entropy(label_smoothing=ε)`` and fairseq, so the loss per token is
    (1 − ε)·(−log p_y) + (ε/V)·Σ_v(−log p_v).

    Args:
        epsilon: ε_ls; the paper uses 0.1.
        ignore_index: target id that contributes nothing (padding).
        reduction: "mean" over non-ignored tokens, or "sum".
    """

    def __init__(self, epsilon: float = 0.1, ignore_index: int = 0, reduction: str = "mean"):
        super().__init__()
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', not {reduction!r}")
        self.epsilon = epsilon
        self.ignore_index = ignore_index
        self.reduction = reduction

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        """Args: logits (..., V); target (...) ids. Returns: a scalar loss (float32)."""
        log_probs = F.log_softmax(logits.float(), dim=-1)  # (..., V)
        keep = target != self.ignore_index  # (...)
        nll = -log_probs.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)  # (...)
        uniform = -log_probs.mean(-1)  # (...): (1/V) Σ_v −log p_v
        per_token = (1 - self.epsilon) * nll + self.epsilon * uniform
        total = per_token.masked_fill(~keep, 0.0).sum()
        return total / keep.sum().clamp(min=1) if self.reduction == "mean" else total
