"""Linear layers with int8 weights for CPU inference (dynamic quantization).

Each weight row (one output unit) is stored as int8 with its own scale, s_j = max|W_j| / 127.
Each input row (one position of one sentence) is quantized when it arrives, to int8 with
its own scale, max|x_i| / 127 (symmetric: zero stays exact), so that a sentence translates
the same alone or in any batch. The kernel reads it shifted by 128, as uint8 with zero point
128: the same integers, but the pairing of unsigned inputs with signed weights is the one
every x86 int8 kernel of oneDNN takes (VNNI's instructions multiply unsigned by signed
bytes). Signed inputs it takes only on AMX; elsewhere it fell back to its reference
kernel, orders of magnitude slower. The products are summed in int32 in oneDNN's int8
kernel (the x86 one PyTorch's own compiler lowers to, on AMX or VNNI where the CPU has
them), then scaled back to float32 by the row's and the output unit's scales, and the bias
added. ``benchmarks/speed/int8.py`` timed it against the other candidates (``int8.md`` on a
Sapphire Rapids, ``int8_zen5.md`` on a Zen 5).

A CPU with AVX2 but no VNNI multiplies the bytes with ``vpmaddubsw``, which adds each pair
of products into a *saturating* 16-bit sum: 2 · 255 · 127 overflows it, and every output
came out wrong (a row of ones times a row of ones gave 0.03 for 4). Where a probe of the
kernel (:func:`input_levels`, once a process) sees that, inputs take 63 levels a side
(shifted by 64 into 1 … 127), so a pair is at most 2 · 127 · 127 = 32,258 and the sums are
exact again; the inputs' step doubles there, as fbgemm's ``reduce_range`` does on such CPUs.

Only the linear layers change: embeddings, layer norms, softmax and attention stay float32,
so every view of the model (attention maps, the explainer) runs as before.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor, nn

from transduce.nn.linears import replace_linears

FULL_LEVELS = 127  # an input row's levels a side where the kernel's sums are exact
REDUCED_LEVELS = 63  # where its byte pairs would saturate 16 bits (AVX2 without VNNI)


def _prepack(quantized: Tensor) -> Tensor:
    return torch.ops.onednn.qlinear_prepack(quantized, None)


def _qlinear(
    qx: Tensor, unit: Tensor, zero: Tensor, packed: Tensor, scale: Tensor, w_zero: Tensor
) -> Tensor:
    """oneDNN's u8 × s8 product summed in int32, times each output unit's scale: (M, N).
    ``unit`` is the kernel's input scale, 1: the rows are scaled afterwards."""
    return torch.ops.onednn.qlinear_pointwise.tensor(
        qx, unit, zero, packed, scale, w_zero, None, 1.0, 0, torch.float32, "none", [], "",
    )  # fmt: skip


def extreme_product_is_exact(levels: int) -> bool:
    """Whether the kernel sums exactly a product whose every byte pair is at its largest:
    inputs at the top of ``levels`` levels a side times weights at 127."""
    rows, inner, units = 16, 64, 64  # past the sizes oneDNN hands to a special small kernel
    weight = torch.full((units, inner), FULL_LEVELS, dtype=torch.int8)
    qx = torch.full((rows, inner), 2 * levels + 1, dtype=torch.uint8)  # +levels, shifted
    zero = torch.full((), levels + 1, dtype=torch.int32)
    w_scale, w_zero = torch.ones(units), torch.zeros(units, dtype=torch.int32)
    out = _qlinear(qx, torch.ones(()), zero, _prepack(weight), w_scale, w_zero)
    return torch.equal(out, torch.full_like(out, levels * FULL_LEVELS * inner))


@functools.cache
def input_levels() -> int:
    """How many levels a side an input row is quantized to on this CPU: 127, or 63 where the
    kernel's full-range byte pairs come back wrong (see the module)."""
    return FULL_LEVELS if extreme_product_is_exact(FULL_LEVELS) else REDUCED_LEVELS


class Int8Linear(nn.Module):
    """An inference-only stand-in for ``nn.Linear`` with int8 weights; see the module.

    Args:
        linear: the float layer whose weight and bias it takes (copied, not shared).
    """

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.levels = input_levels()
        scale = weight.abs().amax(1).clamp_min(1e-12) / 127  # (N,) one per output unit
        quantized = (weight / scale[:, None]).round_().clamp_(-127, 127).to(torch.int8)
        self.register_buffer("weight_scale", scale)
        self.register_buffer("weight_zero", torch.zeros_like(scale, dtype=torch.int32))
        self.register_buffer("input_zero", torch.full((), self.levels + 1, dtype=torch.int32))
        self.register_buffer("unit", torch.ones(()))  # made once, not at every call
        self.register_buffer("packed", _prepack(quantized))
        bias = None if linear.bias is None else linear.bias.detach().float().clone()
        self.register_buffer("bias", bias)

    def forward(self, x: Tensor) -> Tensor:
        x = x.float()
        scale = x.abs().amax(-1, keepdim=True).div_(self.levels).clamp_(min=1e-12)  # per row
        # |x| / scale ≤ levels: no clamp needed; shifted into 1 … 2·levels + 1 (see the module)
        qx = (x / scale).round_().add_(self.levels + 1).to(torch.uint8)
        out = _qlinear(
            qx, self.unit, self.input_zero, self.packed, self.weight_scale, self.weight_zero
        )
        out.mul_(scale)
        return out if self.bias is None else out.add_(self.bias)

    def extra_repr(self) -> str:
        levels = "" if self.levels == FULL_LEVELS else f", inputs ±{self.levels}"
        return f"in_features={self.in_features}, out_features={self.out_features}, int8{levels}"


def quantize_linears(model: nn.Module) -> int:
    """Replace, in place, every ``nn.Linear`` inside ``model`` by an :class:`Int8Linear`
    (for inference on a CPU; the model should be in eval mode). Returns how many."""
    return replace_linears(model, Int8Linear)
