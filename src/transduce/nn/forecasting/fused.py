"""LogSparse attention fused into one pass per sequence: the C kernel
``nn/csrc/shifted_attention.c``, compiled at first use (:mod:`transduce.nn.native`).

:func:`~transduce.nn.forecasting.logsparse.shifted_attention_ops` computes the attention on
a pattern's few offsets with PyTorch's operations: a product and a sum per offset, each over
the whole batch, so every score and weight makes several trips through memory, and in
bfloat16 the queries, keys and values are first copied into float32 with time last. The C
kernel takes one sequence (a batch row and head) at a time, in the layout and type the
caller has (float32 or bfloat16, any strides), into float32 rows held in the cache, and
does the scores, softmax, dropout mask and weighted sum there; the backward likewise. It
runs on PyTorch's own OpenMP threads, as many as ``torch.get_num_threads()``. Where the
kernel cannot be built, :func:`kernel` returns None and the attention keeps PyTorch's path;
both give the same results to 1e-5 (a test checks them against the dense masked attention).
"""

from __future__ import annotations

import ctypes

import torch
from torch import Tensor

from transduce.nn import native
from transduce.nn.dropout import keep_mask


def kernel() -> ctypes.CDLL | None:
    """The compiled kernel, or None where it cannot be had (see :mod:`transduce.nn.native`)."""
    return native.library("shifted_attention")


def _view(x: Tensor) -> native.StridedTensor:
    """(B, H, T, D) ``x`` as the kernel reads it."""
    return native.StridedTensor(x.data_ptr(), int(x.dtype == torch.bfloat16), *x.stride())


def _check(failed: int) -> None:
    if failed:
        raise MemoryError("the fused LogSparse attention could not allocate its scratch rows")


class _Fused(torch.autograd.Function):
    @staticmethod
    def forward(ctx, qk, v, offsets, valid, keep, kept):
        q, k = qk.unbind(1)
        B, H, T, D = q.shape
        M = offsets.numel()
        probs = q.new_empty(B * H, M, T, dtype=torch.float32)
        out = torch.empty(B, T, H, D, dtype=v.dtype).transpose(1, 2)  # (B, T, H · D) behind
        keep_ptr = keep.data_ptr() if keep is not None else None
        lib, threads = kernel(), torch.get_num_threads()
        _check(
            lib.shifted_forward(
                *map(_view, (q, k, v, out)), offsets.data_ptr(), valid.data_ptr(), keep_ptr,
                kept, probs.data_ptr(), B, H, T, M, D, threads
            )
        )  # fmt: skip
        ctx.save_for_backward(qk, v, offsets, keep, probs)
        ctx.kept = kept
        return out

    @staticmethod
    def backward(ctx, grad):
        qk, v, offsets, keep, probs = ctx.saved_tensors
        q, k = qk.unbind(1)
        B, H, T, D = q.shape
        dqk, dv = map(torch.empty_like, (qk, v))  # their layouts where dense, else packed
        dq, dk = dqk.unbind(1)
        keep_ptr = keep.data_ptr() if keep is not None else None
        lib, threads = kernel(), torch.get_num_threads()
        _check(
            lib.shifted_backward(
                *map(_view, (grad, q, k, v, dq, dk, dv)), offsets.data_ptr(), keep_ptr,
                ctx.kept, probs.data_ptr(), B, H, T, offsets.numel(), D, threads
            )
        )  # fmt: skip
        return dqk, dv, None, None, None, None


def usable(*xs: Tensor) -> bool:
    """Whether the fused kernel can take these tensors (any strides): on the CPU, in
    float32 or bfloat16, and the kernel compiled."""
    return (
        all(x.device.type == "cpu" and x.dtype in (torch.float32, torch.bfloat16) for x in xs)
        and kernel() is not None
    )


def fused_attention(
    qk: Tensor, v: Tensor, keys: tuple[tuple[int, ...], Tensor], dropout_p: float
) -> Tensor:
    """The attention of :func:`~transduce.nn.forecasting.logsparse.shifted_attention`,
    fused. Args: qk (B, 2, H, T, D): queries and keys; v (B, H, T, D); any strides, the
    gradients returned in the same layouts; ``keys``: the offsets (M,) and the
    (T, M) cells each step may attend (:func:`~.logsparse.key_offsets`); ``dropout_p`` on
    the weights (0 outside training). Returns (B, H, T, D) in v's type, a view of a
    (B, T, H · D) tensor."""
    offsets = torch.tensor(keys[0], dtype=torch.int32)
    valid = keys[1].t().to(torch.uint8).contiguous()  # (M, T)
    mask, kept = None, 1.0
    if dropout_p > 0:
        B, _, H, T, _ = qk.shape
        keep, p = keep_mask((B * H, offsets.numel(), T), dropout_p)
        if p > 0:
            mask, kept = keep.view(torch.uint8), 1.0 / (1.0 - p)
    return _Fused.apply(qk, v, offsets, valid, mask, kept)
