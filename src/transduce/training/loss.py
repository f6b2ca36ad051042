"""Label-smoothed cross-entropy (Szegedy et al. 2016; Vaswani et al. 2017, §5.4)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transduce.nn import native

# The least argument the fused loss passes to exp on PyTorch's path (see _Rows._with_torch).
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

    ``hidden`` and ``weight`` come in as they are (float32 parameters and activations) and
    the products run in ``dtype`` (autocast's, or None for their own): casting the (V, D)
    weight outside would give autograd a cast to undo and a gradient rounded to bfloat16 and
    back: two more (V, D) copies a step. So the weight's gradient is summed in float32 and
    handed back as it is.
    """

    @staticmethod
    def forward(ctx, hidden, weight, target, epsilon, chunk, group, dtype):  # noqa: D102
        low_hidden = hidden if dtype is None else hidden.to(dtype)
        low_weight = weight if dtype is None else weight.to(dtype)
        grad_hidden, grad_weight, total = _chunks(
            low_hidden, low_weight, target, epsilon, chunk, group
        )
        ctx.save_for_backward(grad_hidden, grad_weight)
        ctx.dtypes = hidden.dtype, weight.dtype
        return total

    @staticmethod
    def backward(ctx, grad_output):  # noqa: D102
        grad_hidden, grad_weight = ctx.saved_tensors
        hidden_dtype, weight_dtype = ctx.dtypes
        return (
            grad_hidden.to(hidden_dtype) * grad_output,
            grad_weight.to(weight_dtype) * grad_output,
            *(None,) * 5,
        )


def _chunks(hidden, weight, target, epsilon: float, chunk: int, group: int):
    """The loss of ``hidden @ weight.T`` summed over rows, with its gradients in ``hidden``
    (in its dtype) and ``weight`` (summed in float32), a chunk of rows at a time."""
    V, N = weight.shape[0], hidden.shape[0]
    grad_hidden = torch.empty_like(hidden)
    grad_weight = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device)
    total = hidden.new_zeros((), dtype=torch.float32)
    rows = _Rows(hidden.new_empty((min(max(group, chunk, 1), N), V)), target, epsilon)
    # ``rows.low`` keeps the logits of up to ``group`` rows, then their gradients, so that
    # the weight's gradient is one product (added to the float32 sum in place) per group,
    # not per chunk. On a Zen 5 the loss of a 4,096-token batch (V = 8,000, D = 256) took 86
    # ms this way and 92 with one product per 256-row chunk, about 1.5% of the step.
    first = 0  # the first row whose gradient ``rows.low`` holds
    for start in range(0, N, chunk):
        h = hidden[start : start + chunk]  # (C, D)
        c, at = h.shape[0], start - first
        if at + c > rows.low.shape[0]:  # the group is full: its rows' share of the weight's
            grad_weight.add_(rows.low[:at].t() @ hidden[first:start])  # (V, D)
            first, at = start, 0
        z = torch.mm(h, weight.t(), out=rows.low[at : at + c])  # (C, V) logits
        total += rows.loss_and_gradient(z, start)  # z now the gradient
        torch.mm(z, weight, out=grad_hidden[start : start + c])
    grad_weight.add_(rows.low[: N - first].t() @ hidden[first:])  # (V, D)
    return grad_hidden, grad_weight, total


class _Rows:
    """Turns a block of logits into their gradient in place, returning the block's loss:
    the C kernel ``nn/csrc/smoothed_ce.c`` in one visit of each row, else PyTorch's
    operations (the same figures to float32 rounding; tests check both)."""

    def __init__(self, low: Tensor, target: Tensor, epsilon: float):
        self.low, self.target, self.epsilon = low, target, epsilon
        kernel = native.library("smoothed_ce") if low.device.type == "cpu" else None
        self.kernel = kernel if low.dtype in (torch.float32, torch.bfloat16) else None
        self.full = None  # the fallback's float32 block, made at its first use
        if self.kernel is not None:  # the ids as the kernel reads them, checked once
            self.target = target.to(torch.int64).contiguous()
            V = low.shape[1]
            if target.numel() and not (0 <= int(target.min()) and int(target.max()) < V):
                raise IndexError(f"a gold id lies outside the {V} classes")  # C would read it

    def loss_and_gradient(self, z: Tensor, start: int) -> Tensor:
        """Args: z (C, V) logits of rows ``start`` … ``start`` + C − 1, rows contiguous,
        overwritten by dloss/dz."""
        y = self.target[start : start + z.shape[0]]  # (C,) gold ids
        if self.kernel is not None:
            losses = torch.empty(z.shape[0], dtype=torch.float32)
            bf16 = int(z.dtype == torch.bfloat16)
            failed = self.kernel.smoothed_ce(
                z.data_ptr(), bf16, *z.shape, z.stride(0), y.data_ptr(), self.epsilon,
                losses.data_ptr(), torch.get_num_threads(),
            )  # fmt: skip
            if failed:
                raise MemoryError("smoothed_ce: out of memory for a row buffer")
            return losses.sum()
        return self._with_torch(z, y)

    def _with_torch(self, z: Tensor, y: Tensor) -> Tensor:
        epsilon, (c, V), low = self.epsilon, z.shape, z
        if z.dtype != torch.float32:  # a float32 copy, which becomes the softmax
            if self.full is None or self.full.shape[0] < c:
                self.full = z.new_empty((c, V), dtype=torch.float32)
            z = self.full[:c].copy_(z)
        picked = z.gather(-1, y.unsqueeze(-1)).squeeze(-1)  # (C,)
        mean = z.mean(-1)  # (C,)
        top = z.amax(-1, keepdim=True)  # (C, 1)
        # z − top ≥ EXP_FLOOR before exp: PyTorch's CPU exp takes a path about ten times
        # slower for results below float32's normal range (arguments under ≈ −87.3),
        # where logits spread that far (no label smoothing, a diverging run). exp(EXP_FLOOR)
        # is ~1e-35 against a row sum of at least 1, so the loss and gradient do not move.
        norm = z.sub_(top).clamp_(min=EXP_FLOOR).exp_().sum(-1, keepdim=True)  # (C, 1)
        lse = (top + norm.log()).squeeze(-1)  # (C,)
        grad = z.div_(norm).sub_(epsilon / V)  # softmax − ε/V
        grad.scatter_add_(-1, y.unsqueeze(-1), grad.new_full((c, 1), -(1 - epsilon)))
        if grad.data_ptr() != low.data_ptr():
            low.copy_(grad)  # in the matmul's dtype
        # (1 − ε)(lse − z_y) + ε(lse − mean_v z_v)
        return (lse - (1 - epsilon) * picked - epsilon * mean).sum()


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
    kind = hidden.device.type
    dtype = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else None
    with torch.autocast(kind, enabled=False):
        return _LinearLabelSmoothedCE.apply(hidden, weight, target, epsilon, chunk, group, dtype)
