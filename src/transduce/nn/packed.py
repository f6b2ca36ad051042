"""Linear layers with weights packed once for oneDNN, for CPU inference: bfloat16 weights
for autocast, or float32 ones for float32 decoding.

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

In float32 (``dtype=torch.float32``) the packed float32 weight serves every call outside
autocast, the attention maps and the explainer included, so they see what the translation
computed. ``F.linear`` in float32 runs MKL's sgemm. On AMD CPUs, where MKL takes no fast
path of its own (CTranslate2 picks oneDNN there for the same reason), oneDNN's packed
kernel was faster at 11 of 16 shapes of a beam-search step (slower at 256 → 256 on few
rows), 3.8× on the output layer of a single sentence (``benchmarks/speed/int8.py``: its
``float32 packed`` column), so float32 translation packs its layers there
(:func:`transduce.device.fp32_packing_pays`). A row's output is also the same bit for bit
alone or in any batch, where MKL's changes in its last bits with the number of rows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from transduce.nn.linears import replace_linears

# the batch rows the layout is chosen for: a decoder step of ~60 sentences at beam 5;
# any number of rows runs on it
ROWS_HINT = 300


def packing_supported(dtype: torch.dtype = torch.bfloat16) -> bool:
    """Whether this PyTorch can pack and run linear layers of ``dtype`` (bfloat16 or
    float32) in oneDNN: x86 builds with oneDNN, and for bfloat16 a CPU it runs bfloat16
    on."""
    found = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")
    if dtype == torch.bfloat16:
        return found and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    return found and dtype == torch.float32


class PackedLinear(nn.Module):
    """An inference-only stand-in for ``nn.Linear`` that keeps a copy of its weight in
    oneDNN's layout. With ``dtype`` bfloat16: under CPU autocast it runs on that copy
    (what autocast's ``F.linear`` computes, bit for bit); outside autocast, on the float
    weight, as the layer did (so a view computed without autocast is unchanged). With
    float32: outside autocast it runs on the float32 copy (each row's output independent
    of the batch), under autocast as ``nn.Linear``. See the module.

    Args:
        linear: the float layer whose weight and bias it takes (shared, not copied).
        dtype: the packed copy's, ``torch.bfloat16`` or ``torch.float32``.
    """

    def __init__(self, linear: nn.Linear, dtype: torch.dtype = torch.bfloat16) -> None:
        super().__init__()
        if dtype not in (torch.bfloat16, torch.float32):
            raise ValueError(f"packed linear layers are bfloat16 or float32, not {dtype}")
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias, self.dtype = linear.weight, linear.bias, dtype
        weight = linear.weight.detach().to(dtype)
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(weight, ROWS_HINT))
        bias = None if linear.bias is None else linear.bias.detach().to(dtype)
        self.register_buffer("packed_bias", bias)

    def forward(self, x: Tensor) -> Tensor:
        autocast = torch.is_autocast_enabled("cpu")
        if self.dtype == torch.float32 and not autocast and x.dtype == torch.float32:
            return torch.ops.mkldnn._linear_pointwise(
                x, self.packed, self.packed_bias, "none", [], ""
            )
        if self.dtype == torch.float32 or not autocast:
            return F.linear(x, self.weight, self.bias)
        return torch.ops.mkldnn._linear_pointwise(
            x.to(torch.bfloat16), self.packed, self.packed_bias, "none", [], ""
        )

    def extra_repr(self) -> str:
        kind = "bf16" if self.dtype == torch.bfloat16 else "fp32"
        return f"in_features={self.in_features}, out_features={self.out_features}, packed {kind}"


def pack_linears(model: nn.Module, dtype: torch.dtype = torch.bfloat16) -> int:
    """Replace, in place, every ``nn.Linear`` inside ``model`` by a :class:`PackedLinear`
    of ``dtype`` (for bfloat16 or float32 inference on a CPU; the model should be in eval
    mode and used for nothing else: its linear layers no longer train). Returns how
    many."""
    return replace_linears(model, lambda linear: PackedLinear(linear, dtype))


def unpack_linears(model: nn.Module) -> int:
    """Undo :func:`pack_linears`: put a plain ``nn.Linear`` on the same weight and bias
    back in place of every :class:`PackedLinear` (float32 then runs MKL's sgemm again, as
    ``benchmarks/speed/run.py``'s ``transduce-fp32-mkl`` does). Returns how many."""
    return replace_linears(model, _plain, PackedLinear)


def _plain(packed: PackedLinear) -> nn.Linear:
    linear = nn.Linear(packed.in_features, packed.out_features, packed.bias is not None, "meta")
    linear.weight, linear.bias = packed.weight, packed.bias
    return linear
