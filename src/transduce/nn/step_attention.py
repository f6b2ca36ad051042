"""The attention of a decoding step in one pass: the C kernel ``nn/csrc/step_attention.c``,
compiled at first use (:mod:`transduce.nn.native`).

A beam-search step asks one query a beam of its own cached keys, and one query a beam of
its sentence's source keys. With PyTorch's operations in bfloat16 each step copies the
whole cache into float32 (the explicit float32 path of ``multi_head_attention``), then
makes the scores, their softmax and the weighted sum, each a trip through memory. The
kernel reads a (row, head)'s keys and values once, in the layout and type they are cached
in, and writes the heads' outputs straight into the rows the output projection reads.
Without gradients only, and without weights: the attention views and the explainer keep
the explicit path. Where the kernel cannot be built, :func:`step_attention` returns None
and the caller keeps PyTorch's path; both give the same outputs to float32 rounding
(tests check them).
"""

from __future__ import annotations

import ctypes
import math

import torch
from torch import Tensor

from transduce.nn import native

TYPES = (torch.float32, torch.bfloat16)
MAX_QUERIES = 16  # a key row's queries the kernel holds (its sums in registers)


def kernel() -> ctypes.CDLL | None:
    """The compiled kernel, or None where it cannot be had (see :mod:`transduce.nn.native`)."""
    return native.library("step_attention")


def step_attention(
    q: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None, num_heads: int
) -> Tensor | None:
    """softmax(q kᵀ/√Dh) v for each head, or None where the kernel cannot take the inputs
    (then the caller computes it with PyTorch's operations).

    Args:
        q: (B, Q, H · Dh) projected queries, not yet split into heads. With B = M · g, the
            g rows m · g … m · g + g − 1 share key row m (a sentence's beams); g · Q at
            most ``MAX_QUERIES``.
        keys, values: (M, H, K, Dh), any strides but the last (1); Dh a multiple of 16.
        mask: None, or boolean (M|1, 1, K) or (M|1, 1, 1, K): True keeps a key.
        num_heads: H.

    Returns:
        (B, Q, H · Dh) in q's type, the heads side by side as the output projection reads them.
    """
    M, H, K, Dh = keys.shape
    B, Q, width = q.shape
    if (
        torch.is_grad_enabled()
        or H != num_heads
        or width != H * Dh
        or B % M
        or B // M * Q > MAX_QUERIES
        or Dh % 16
        or keys.stride(-1) != 1
        or values.stride(-1) != 1
        or values.shape != keys.shape
        or any(x.device.type != "cpu" or x.dtype not in TYPES for x in (q, keys, values))
    ):
        return None
    mask_batch = 0
    if mask is not None:
        if mask.dtype != torch.bool or mask.shape[-1] != K or mask.numel() != mask.shape[0] * K:
            return None  # a query axis, or per-head masks: the general path
        mask = mask.reshape(mask.shape[0], K).contiguous()
        if mask.shape[0] not in (1, M):
            return None
        mask_batch = K if mask.shape[0] == M else 0
    lib = kernel()
    if lib is None:
        return None
    q = q.contiguous()
    out = torch.empty_like(q)
    failed = lib.step_attention(
        q.data_ptr(), int(q.dtype == torch.bfloat16), _view(keys), _view(values),
        None if mask is None else mask.data_ptr(), mask_batch, out.data_ptr(),
        int(out.dtype == torch.bfloat16), M, B // M * Q, H, K, Dh, 1.0 / math.sqrt(Dh),
        torch.get_num_threads(),
    )  # fmt: skip
    if failed:
        raise MemoryError("the decoding step's attention could not allocate its scratch rows")
    return out


def _view(x: Tensor) -> native.StridedTensor:
    """(M, H, K, Dh) ``x`` as the kernel reads it."""
    return native.StridedTensor(x.data_ptr(), int(x.dtype == torch.bfloat16), *x.stride())
