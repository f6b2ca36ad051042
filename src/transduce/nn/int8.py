"""Linear layers with int8 weights for CPU inference (dynamic quantization).

Each weight row (one output unit) is stored as int8 with its own scale, s_j = max|W_j| / 127.
Each input is quantized when it arrives, to int8 with one scale, max|x| / 127 (symmetric:
zero stays exact, and quantizing takes three operations). The products are summed in int32
and scaled back to float32 with the bias added, in one oneDNN call: the x86 int8 kernel
that PyTorch's own compiler lowers to, on AMX or VNNI where the CPU has them.
``benchmarks/speed/int8.py`` timed it against the other candidates.

Only the linear layers change: embeddings, layer norms, softmax and attention stay float32,
so every view of the model (attention maps, the explainer) runs as before.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

# Products of fewer rows × outputs than this run in float32: there quantizing the input and
# calling the int8 kernel cost more than they save (benchmarks/speed/int8.md: at 5 or 80 rows
# of a 256 → 256 layer float32 is faster; at 80 rows of 256 → 1024, or 5 of 256 → 8000, int8).
INT8_MIN_PRODUCT = 32_768


class Int8Linear(nn.Module):
    """An inference-only stand-in for ``nn.Linear`` with int8 weights; see the module.
    Small products (fewer than ``INT8_MIN_PRODUCT`` rows × outputs, such as one sentence's
    beams through a 256-wide projection) take the float32 weight, which it keeps.

    Args:
        linear: the float layer whose weight and bias it takes (the weight shared, not
            copied; the int8 copy is its own).
    """

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        scale = weight.abs().amax(1).clamp_min(1e-12) / 127  # (N,) one per output unit
        quantized = (weight / scale[:, None]).round_().clamp_(-127, 127).to(torch.int8)
        self.register_buffer("weight_scale", scale)
        self.register_buffer("weight_zero", torch.zeros_like(scale, dtype=torch.int32))
        self.register_buffer("input_zero", torch.zeros((), dtype=torch.int32))
        self.register_buffer("packed", torch.ops.onednn.qlinear_prepack(quantized, None))
        bias = None if linear.bias is None else linear.bias.detach().float().clone()
        self.register_buffer("bias", bias)
        self.register_buffer("weight", linear.weight.detach())

    def forward(self, x: Tensor) -> Tensor:
        x = x.float()
        if x.numel() // self.in_features * self.out_features < INT8_MIN_PRODUCT:
            return F.linear(x, self.weight, self.bias)
        scale = x.abs().amax().div_(127).clamp_(min=1e-12)  # one scale for the whole input
        qx = (x / scale).round_().to(torch.int8)  # |x| / scale ≤ 127: no clamp needed
        return torch.ops.onednn.qlinear_pointwise.tensor(
            qx, scale, self.input_zero, self.packed, self.weight_scale, self.weight_zero,
            self.bias, 1.0, 0, torch.float32, "none", [], "",
        )  # fmt: skip

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def quantize_linears(model: nn.Module) -> int:
    """Replace, in place, every ``nn.Linear`` inside ``model`` by an :class:`Int8Linear`
    (for inference on a CPU; the model should be in eval mode). Returns how many."""
    swaps = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is nn.Linear
    ]
    for parent, name, child in swaps:
        setattr(parent, name, Int8Linear(child))
    return len(swaps)
