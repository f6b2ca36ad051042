"""Dropout (Srivastava et al. 2014) with a cheaper random mask on the CPU.

On a CPU, ``F.dropout`` draws one Bernoulli sample per element from a serial generator:
on a 2-core Zen 5, 80 times the multiply that applies it (benchmarks/speed/dropout.md),
and a Multi30k model trained 1.30× faster with this module than through it
(benchmarks/speed/results_zen5.md, the transduce-torch-dropout row; 1.10× on a Zen 3
before the kernels below, results_zen3.md). Here a 64-bit random word gives four 16-bit uniform
numbers, each compared with a threshold, so a mask costs a quarter of the draws. The drop
probability is then p rounded to a multiple of 2⁻¹⁶ (``torch.rand``'s floats are
themselves multiples of 2⁻²⁴) and the kept values are scaled by 1 / (1 − that
probability), so the expectation is unchanged.

The words come from one of two places. Where the C kernel ``nn/csrc/dropout.c`` can be
built (:mod:`transduce.nn.native`), from a counter-based stream (SplitMix64) seeded by one
draw of PyTorch's generator, computed in parallel with the mask and the scaled values in
one pass over float32 or bfloat16, the mask kept as a byte an element for the backward;
else each word is a draw of PyTorch's generator (``torch.randint``, serial) and the mask
is applied by PyTorch's operations. Either way the masks come from the default generator:
``torch.manual_seed`` repeats them, and the training engine's saved RNG state resumes
them. Other devices use ``F.dropout``.
"""

from __future__ import annotations

import ctypes
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transduce.nn import native

_LEVELS = 1 << 16  # a 16-bit uniform number: one of 65536 levels


def _kernel() -> ctypes.CDLL | None:
    return native.library("dropout")


def _words(shape: tuple[int, ...]) -> Tensor:
    """Uniform 64-bit words from PyTorch's default generator."""
    return torch.randint(-(1 << 63), (1 << 63) - 1, shape, dtype=torch.int64)


def _seed() -> int:
    """One word of PyTorch's default generator: the seed of a kernel's stream."""
    return int(_words(())) % (1 << 64)


def keep_mask(shape: torch.Size | tuple[int, ...], p: float) -> tuple[Tensor, float]:
    """A boolean CPU mask of ``shape``, each element False with probability ≈ p, and the
    probability it was drawn with (p rounded to a multiple of 2⁻¹⁶)."""
    n = math.prod(shape)
    dropped = round(p * _LEVELS)
    lib = _kernel()
    if lib is not None:
        keep = torch.empty(shape, dtype=torch.bool)
        lib.dropout_mask(keep.data_ptr(), n, _seed(), dropped, torch.get_num_threads())
        return keep, dropped / _LEVELS
    uniform = (
        _words(((n + 3) // 4,)).view(torch.int16)[:n].view(shape)
    )  # each uniform on [-32768, 32767]
    return uniform >= dropped - (1 << 15), dropped / _LEVELS


class _Dropout(torch.autograd.Function):
    """The kernel's dropout: the scaled values and the mask in one pass, the gradient in
    another (the mask saved as a byte an element)."""

    @staticmethod
    def forward(ctx, x: Tensor, p: float) -> Tensor:
        dropped = round(p * _LEVELS)
        scale = 1.0 / (1.0 - dropped / _LEVELS)
        out, keep = torch.empty_like(x), torch.empty(x.shape, dtype=torch.bool)
        bf16, threads = int(x.dtype == torch.bfloat16), torch.get_num_threads()
        _kernel().dropout_forward(
            x.data_ptr(), out.data_ptr(), keep.data_ptr(), x.numel(), bf16, _seed(), dropped,
            scale, threads
        )  # fmt: skip
        ctx.save_for_backward(keep)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        (keep,) = ctx.saved_tensors
        return _kept(grad, keep, ctx.scale, grad.dtype), None


def _bf16(x: Tensor) -> int:
    return int(x.dtype == torch.bfloat16)


def _kept(grad: Tensor, keep: Tensor, scale: float, dtype: torch.dtype) -> Tensor:
    """The gradient through a kernel's dropout: ``grad`` × scale where ``keep``, else 0, as
    ``dtype``."""
    grad = grad.contiguous()
    out = torch.empty(grad.shape, dtype=dtype)
    _kernel().dropout_backward(
        grad.data_ptr(), out.data_ptr(), keep.data_ptr(), grad.numel(),
        _bf16(grad) | _bf16(out) << 1, scale, torch.get_num_threads()
    )  # fmt: skip
    return out


class _DropoutAdd(torch.autograd.Function):
    """x + the kernel's dropout of y, in one pass and in the promoted type (so a bfloat16 y
    is neither rounded after its scaling nor copied to float32 before the sum); x's gradient
    is the sum's, y's the kept part of it, scaled."""

    @staticmethod
    def forward(ctx, x: Tensor, y: Tensor, p: float) -> Tensor:
        dropped = round(p * _LEVELS)
        scale = 1.0 / (1.0 - dropped / _LEVELS)
        out = torch.empty(x.shape, dtype=torch.promote_types(x.dtype, y.dtype))
        keep = torch.empty(x.shape, dtype=torch.bool)
        _kernel().dropout_add_forward(
            x.data_ptr(), y.data_ptr(), out.data_ptr(), keep.data_ptr(), x.numel(),
            _bf16(x) | _bf16(y) << 1 | _bf16(out) << 2, _seed(), dropped, scale,
            torch.get_num_threads()
        )  # fmt: skip
        ctx.save_for_backward(keep)
        ctx.scale, ctx.y_dtype = scale, y.dtype
        return out

    @staticmethod
    def backward(ctx, grad: Tensor):
        (keep,) = ctx.saved_tensors
        return grad, _kept(grad, keep, ctx.scale, ctx.y_dtype), None


def _kernel_takes(p: float, *xs: Tensor) -> bool:
    """Whether the C kernel drops out at rate ``p`` over ``xs``: a rate it can draw, and
    contiguous float32 or bfloat16 CPU tensors, the kernel built."""
    return (
        0 < p < 1
        and round(p * _LEVELS) > 0
        and all(x.device.type == "cpu" and x.dtype in (torch.float32, torch.bfloat16) for x in xs)
        and all(x.is_contiguous() for x in xs)
        and _kernel() is not None
    )


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """``F.dropout(x, p, training)``, with :func:`keep_mask`'s cheaper mask on the CPU."""
    if not training or p == 0:
        return x
    if x.device.type != "cpu" or not x.is_floating_point() or not 0 < p < 1:
        return F.dropout(x, p, training)  # p outside [0, 1] gets PyTorch's own error
    if round(p * _LEVELS) == 0:
        return x
    if _kernel_takes(p, x):
        return _Dropout.apply(x, p)
    keep, q = keep_mask(x.shape, p)
    return x * (keep.to(x.dtype) * (1.0 / (1.0 - q)))


def dropout_add(x: Tensor, y: Tensor, p: float, training: bool = True) -> Tensor:
    """``x + dropout(y, p, training)``, a residual connection's sum: in one pass of the C
    kernel where it is built and x and y are contiguous float32 or bfloat16 CPU tensors of
    one shape (the same mask as :func:`dropout` would draw), else as written."""
    if training and x.shape == y.shape and _kernel_takes(p, x, y):
        return _DropoutAdd.apply(x, y, p)
    return x + dropout(y, p, training)


class Dropout(nn.Dropout):
    """``nn.Dropout`` (its checks, its state dict: none) whose forward is :func:`dropout`."""

    def forward(self, x: Tensor) -> Tensor:  # noqa: D102
        return dropout(x, self.p, self.training)

    def add(self, x: Tensor, y: Tensor) -> Tensor:
        """``x + self(y)``, in one pass where it can be (:func:`dropout_add`)."""
        return dropout_add(x, y, self.p, self.training)
