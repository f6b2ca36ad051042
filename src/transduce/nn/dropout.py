"""Dropout (Srivastava et al. 2014) with a cheaper random mask on the CPU.

On a CPU, ``F.dropout`` draws one Bernoulli sample per element from a serial generator:
on a 2-core Zen 3, tens of times the multiply that applies it (benchmarks/speed/dropout.py),
and a Multi30k model trained 1.10× faster without it (benchmarks/speed/results_zen3.md,
the transduce-torch-dropout row). Here one 64-bit draw of PyTorch's generator gives four
16-bit uniform numbers, each compared with a threshold, so a mask costs a quarter of the
draws. The drop probability is then p rounded to a multiple of 2⁻¹⁶ (``torch.rand``'s
floats are themselves multiples of 2⁻²⁴) and the kept values are scaled by
1 / (1 − that probability), so the expectation is unchanged. Masks come from the default
generator: ``torch.manual_seed`` repeats them, and the training engine's saved RNG state
resumes them. Other devices use ``F.dropout``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

_LEVELS = 1 << 16  # a 16-bit uniform number: one of 65536 levels


def keep_mask(shape: torch.Size | tuple[int, ...], p: float) -> tuple[Tensor, float]:
    """A boolean CPU mask of ``shape``, each element False with probability ≈ p, and the
    probability it was drawn with (p rounded to a multiple of 2⁻¹⁶)."""
    n = math.prod(shape)
    dropped = round(p * _LEVELS)
    words = torch.randint(-(1 << 63), (1 << 63) - 1, ((n + 3) // 4,), dtype=torch.int64)
    uniform = words.view(torch.int16)[:n].view(shape)  # each uniform on [-32768, 32767]
    return uniform >= dropped - (1 << 15), dropped / _LEVELS


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """``F.dropout(x, p, training)``, with :func:`keep_mask`'s cheaper mask on the CPU."""
    if not training or p == 0:
        return x
    if x.device.type != "cpu" or not x.is_floating_point() or not 0 < p < 1:
        return F.dropout(x, p, training)  # p outside [0, 1] gets PyTorch's own error
    keep, q = keep_mask(x.shape, p)
    if q == 0:
        return x
    return x * (keep.to(x.dtype) * (1.0 / (1.0 - q)))


class Dropout(nn.Dropout):
    """``nn.Dropout`` (its checks, its state dict: none) whose forward is :func:`dropout`."""

    def forward(self, x: Tensor) -> Tensor:  # noqa: D102
        return dropout(x, self.p, self.training)
