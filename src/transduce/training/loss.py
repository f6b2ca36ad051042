"""Label-smoothed cross-entropy (Szegedy et al. 2016; Vaswani et al. 2017, §5.4)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# The least argument the fused loss passes to exp (see _LinearLabelSmoothedCE.forward).
EXP_FLOOR = -80.0


def smoothing_floor(epsilon: float, classes: int) -> float:
    """The least loss per token that :class:`LabelSmoothedCrossEntropy` can reach: the
    entropy of its target q = (1 − ε)·onehot + ε/V, met only when p = q. A model that has
    learned everything still reports this, e.g. about 0.73 for ε = 0.1 over 67 classes."""
    if epsilon <= 0:
        return 0.0
    top, rest = 1 - epsilon + epsilon / classes, epsilon / classes
    return -(top * math.log(top) + (classes - 1) * rest * math.log(rest))


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


class _LinearLabelSmoothedCE(torch.autograd.Function):
    """Output layer + label-smoothed cross-entropy, row chunk by row chunk.

    The (N, V) logits are never held whole: for each chunk of rows the forward pass computes
    the logits, the loss and, since the loss is the end of the graph, the gradients too
    (dlogits = softmax − q) in buffers that the next chunk reuses. Backward only scales the
    saved gradients.
    """

    @staticmethod
    def forward(ctx, hidden, weight, target, epsilon, chunk, group):  # noqa: D102
        V, N = weight.shape[0], hidden.shape[0]
        grad_hidden = torch.empty_like(hidden)
        grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
        total = hidden.new_zeros((), dtype=torch.float32)
        # Buffers that serve every chunk: ``low``, the logits in the matmul's dtype (later
        # their gradient), and ``full``, their float32 copy, which becomes the softmax (in
        # float32 they are one). Fresh buffers per chunk fault in new pages on a CPU, about
        # 6% of a d128 model's training step.
        # ``low`` keeps the gradients of up to ``group`` rows, so that the weight's
        # gradient is one product (and one float32 sum) per group, not per chunk: in bf16
        # each product's (V, D) result is rounded to bf16 and cast to float32 to be summed.
        # On a Zen 5 the loss of a 4,096-token batch (V = 8,000, D = 256) took 86 ms this
        # way and 92 with one product per 256-row chunk, about 1.5% of the step.
        rows = min(chunk, N)
        low = hidden.new_empty((min(max(group, rows), N), V))
        full = None if low.dtype == torch.float32 else low.new_empty((rows, V), dtype=torch.float32)
        first = 0  # the first row whose gradient ``low`` holds
        for start in range(0, N, chunk):
            h = hidden[start : start + chunk]  # (C, D)
            y = target[start : start + chunk]  # (C,)
            c, at = h.shape[0], start - first
            if at + c > low.shape[0]:  # the group is full: its rows' share of the weight's
                grad_weight += (low[:at].t() @ hidden[first:start]).float()
                first, at = start, 0
            z = torch.mm(h, weight.t(), out=low[at : at + c])  # (C, V) logits
            z = z if full is None else full[:c].copy_(z)
            picked = z.gather(-1, y.unsqueeze(-1)).squeeze(-1)  # (C,)
            mean = z.mean(-1)  # (C,)
            top = z.amax(-1, keepdim=True)  # (C, 1)
            # z − top ≥ EXP_FLOOR before exp: PyTorch's CPU exp takes a path about ten times
            # slower for results below float32's normal range (arguments under ≈ −87.3),
            # where logits spread that far (no label smoothing, a diverging run). exp(EXP_FLOOR)
            # is ~1e-35 against a row sum of at least 1, so the loss and gradient do not move.
            norm = z.sub_(top).clamp_(min=EXP_FLOOR).exp_().sum(-1, keepdim=True)  # (C, 1)
            lse = (top + norm.log()).squeeze(-1)  # (C,)
            # (1 − ε)(lse − z_y) + ε(lse − mean_v z_v)
            total += (lse - (1 - epsilon) * picked - epsilon * mean).sum()
            grad = z.div_(norm).sub_(epsilon / V)  # softmax − ε/V
            grad.scatter_add_(-1, y.unsqueeze(-1), grad.new_full((c, 1), -(1 - epsilon)))
            grad = low[at : at + c].copy_(grad)  # in the matmul's dtype
            torch.mm(grad, weight, out=grad_hidden[start : start + c])
        grad_weight += (low[: N - first].t() @ hidden[first:]).float()
        ctx.save_for_backward(grad_hidden, grad_weight.to(weight.dtype))
        return total

    @staticmethod
    def backward(ctx, grad_output):  # noqa: D102
        grad_hidden, grad_weight = ctx.saved_tensors
        return grad_hidden * grad_output, grad_weight * grad_output, None, None, None, None


def linear_label_smoothed_ce(
    hidden: Tensor,
    weight: Tensor,
    target: Tensor,
    epsilon: float = 0.1,
    chunk: int = 256,
    group: int = 1024,
) -> Tensor:
    """Σ over rows of the label-smoothed cross-entropy of ``hidden @ weight.T``.

    Equal to ``LabelSmoothedCrossEntropy(epsilon, reduction="sum")(hidden @ weight.T, target)``
    with no padding rows, but without materialising the (N, V) logits or their softmax, which
    on a CPU costs more than the matrix multiplication itself (page faults on large buffers).

    Args:
        hidden: (N, D) final decoder states of the positions to score (padding removed).
        weight: (V, D) the output projection (bias-free, possibly tied to the embeddings).
        target: (N,) gold ids.
        epsilon: label smoothing ε. chunk: rows per block. group: rows per product of
            the weight's gradient (a multiple of ``chunk`` uses the buffer whole).

    Returns: a float32 scalar, differentiable in ``hidden`` and ``weight``.
    """
    if torch.is_autocast_enabled(hidden.device.type):
        dtype = torch.get_autocast_dtype(hidden.device.type)
        hidden, weight = hidden.to(dtype), weight.to(dtype)
    with torch.autocast(hidden.device.type, enabled=False):
        return _LinearLabelSmoothedCE.apply(hidden, weight, target, epsilon, chunk, group)
