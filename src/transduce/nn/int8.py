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

Only the linear layers change: embeddings, layer norms, softmax and attention stay float32,
so every view of the model (attention maps, the explainer) runs as before.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from transduce.nn.linears import replace_linears

INPUT_ZERO = 128  # the inputs' zero point: int8 values shifted into uint8


class Int8Linear(nn.Module):
    """An inference-only stand-in for ``nn.Linear`` with int8 weights; see the module.

    Args:
        linear: the float layer whose weight and bias it takes (copied, not shared).
    """

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        weight = linear.weight.detach().float()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        scale = weight.abs().amax(1).clamp_min(1e-12) / 127  # (N,) one per output unit
        quantized = (weight / scale[:, None]).round_().clamp_(-127, 127).to(torch.int8)
        self.register_buffer("weight_scale", scale)
        self.register_buffer("weight_zero", torch.zeros_like(scale, dtype=torch.int32))
        self.register_buffer("input_zero", torch.full((), INPUT_ZERO, dtype=torch.int32))
        self.register_buffer("unit", torch.ones(()))  # the kernel's input scale: rows scale later
        self.register_buffer("packed", torch.ops.onednn.qlinear_prepack(quantized, None))
        bias = None if linear.bias is None else linear.bias.detach().float().clone()
        self.register_buffer("bias", bias)

    def forward(self, x: Tensor) -> Tensor:
        x = x.float()
        scale = x.abs().amax(-1, keepdim=True).div_(127).clamp_(min=1e-12)  # one per row
        # |x| / scale ≤ 127: no clamp needed; shifted into 1 … 255 (see the module)
        qx = (x / scale).round_().add_(INPUT_ZERO).to(torch.uint8)
        out = torch.ops.onednn.qlinear_pointwise.tensor(
            qx, self.unit, self.input_zero, self.packed, self.weight_scale, self.weight_zero,
            None, 1.0, 0, torch.float32, "none", [], "",
        )  # fmt: skip
        out.mul_(scale)
        return out if self.bias is None else out.add_(self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, int8"


def quantize_linears(model: nn.Module) -> int:
    """Replace, in place, every ``nn.Linear`` inside ``model`` by an :class:`Int8Linear`
    (for inference on a CPU; the model should be in eval mode). Returns how many."""
    return replace_linears(model, Int8Linear)
