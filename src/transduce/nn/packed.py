"""Linear layers with bfloat16 weights packed once for oneDNN, for CPU inference.

Under bfloat16 autocast ``F.linear`` casts the float weight to bfloat16 and hands oneDNN
a plain row-major matrix, which the kernel re-lays into its own blocked format (the one
AMX and AVX-512 BF16 tiles read) on every call. Here the weight is laid out once, when
the model is loaded, and every call goes straight to the kernel: the same bfloat16
products, bit for bit, alone or in any batch. ``benchmarks/speed/int8.py`` times it
beside ``F.linear`` on bfloat16 weights and the int8 candidates
(``benchmarks/speed/int8.md``): about even on the 256-wide projections, 1.2-1.4× on the
8,000-word output layer at 80-400 rows, the size of a beam search step.

Only the linear layers change, and only under autocast: embeddings, layer norms, softmax
and attention stay as autocast runs them, and outside autocast (the attention maps, the
explainer) a layer computes with its float weight as before.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transduce.nn.linears import replace_linears

# the batch rows the layout is chosen for: a decoder step of ~60 sentences at beam 5;
# any number of rows runs on it
ROWS_HINT = 300


def packing_supported() -> bool:
    """Whether this PyTorch can pack and run bfloat16 linear layers in oneDNN (x86 builds
    with oneDNN, on a CPU it runs bfloat16 on)."""
    return (
        torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    )


class PackedLinear(nn.Module):
    """An inference-only stand-in for ``nn.Linear`` that keeps a bfloat16 copy of its
    weight in oneDNN's layout: under CPU autocast it runs on that copy (what autocast's
    ``F.linear`` computes, bit for bit); outside autocast, on the float weight, as the
    layer did (so a view computed without autocast is unchanged). See the module.

    Args:
        linear: the float layer whose weight and bias it takes (shared, not copied).
    """

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        weight = linear.weight.detach().to(torch.bfloat16)
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight, ROWS_HINT))
        bias = None if linear.bias is None else linear.bias.detach().to(torch.bfloat16)
        self.register_buffer("packed_bias", bias)

    def forward(self, x: Tensor) -> Tensor:
        if not torch.is_autocast_enabled("cpu"):
            return F.linear(x, self.weight, self.bias)
        return torch.ops.mkldnn._linear_pointwise(
            x.to(torch.bfloat16), self.packed, self.packed_bias, "none", [], ""
        )

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, packed bf16"


def pack_linears(model: nn.Module) -> int:
    """Replace, in place, every ``nn.Linear`` inside ``model`` by a :class:`PackedLinear`
    (for bfloat16 inference on a CPU; the model should be in eval mode and used for nothing
    else: its linear layers no longer train). Returns how many."""
    return replace_linears(model, PackedLinear)
