"""Multi-head attention (Vaswani et al. 2017, §3.2.2).

MultiHead(Q, K, V) = Concat(head_1, …, head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).
All heads are computed at once by reshaping D into (H, Dh); no Python loop over heads.

Legend: B batch, Q queries, K keys, H heads, Dh head size (D / H), D model size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from transduce.nn.attention import scaled_dot_product_attention
from transduce.nn.step_attention import step_attention


class MultiHeadAttention(nn.Module):
    """h parallel scaled dot-product attentions with separate Q/K/V/output projections.

    Two paths give the same result: the explicit one (:func:`scaled_dot_product_attention`)
    runs when weights are asked for, and in training on short sequences under CPU bfloat16
    autocast (where it is faster; see ``_attention_output``); otherwise PyTorch's fused
    ``F.scaled_dot_product_attention`` runs.

    Args:
        d_model: D, the size of queries, keys, values and output.
        num_heads: H; must divide ``d_model``.
        dropout: dropout on the attention weights during training.
        bias: whether the four projections have biases.
    """

    def __init__(self, *, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.num_heads = num_heads
        self.head_size = d_model // num_heads
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def split_heads(self, x: Tensor) -> Tensor:
        """(B, L, D) → (B, H, L, Dh)."""
        B, L, _ = x.shape
        return x.view(B, L, self.num_heads, self.head_size).transpose(1, 2)  # (B, H, L, Dh)

    @staticmethod
    def merge_heads(x: Tensor) -> Tensor:
        """(B, H, L, Dh) → (B, L, D)."""
        B, H, L, Dh = x.shape
        return x.transpose(1, 2).reshape(B, L, H * Dh)  # (B, L, D)

    def project_kv(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Project keys and values once, e.g. to cache them.

        Args:
            key: (B, K, D). value: (B, K, D).

        Returns:
            keys and values split into heads, each (B, H, K, Dh).
        """
        return self.split_heads(self.k_proj(key)), self.split_heads(self.v_proj(value))

    def attend(
        self,
        query: Tensor,
        keys: Tensor,
        values: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attend from raw queries to already projected keys and values.

        Args:
            query: (B, Q, D), not yet projected.
            keys: (B / g, H, K, Dh), from :meth:`project_kv`. With g > 1 each row of keys
                serves g consecutive query rows (the beams of one sentence), and the mask
                must be (B / g, 1, K): one key mask per row of keys.
            values: (B / g, H, K, Dh), from :meth:`project_kv`, row for row with ``keys``.
            mask: boolean (B, Q|1, K) or (B, H|1, Q|1, K); True keeps a key. A
                floating-point mask holds gates that weigh the keys (see
                :func:`~transduce.nn.attention.masked_softmax`) and takes the explicit path,
                since the fused kernel would add it to the scores.
            need_weights: return per-head weights (takes the explicit path).

        Returns:
            output (B, Q, D) and, if asked, weights (B, H, Q, K).
        """
        projected = self.q_proj(query)  # (B, Q, D)
        g = projected.shape[0] // keys.shape[0]
        if not need_weights and g * projected.shape[1] <= STEP_KERNEL_MAX_QUERIES:
            out = step_attention(projected, keys, values, mask, self.num_heads)
            if out is not None:  # a decoding step, in the C kernel (no gradient, no weights)
                return self.out_proj(out), None
        q = self.split_heads(projected)  # (B, H, Q, Dh)
        B, H, Q, Dh = q.shape
        if g > 1:  # the g query rows of one key row become g·Q queries of it
            if mask is not None and mask.shape[-2] != 1:
                raise ValueError("grouped queries need a key mask without a query axis")
            q = q.view(-1, g, H, Q, Dh).transpose(1, 2).reshape(-1, H, g * Q, Dh)
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, 1, Q|1, K): the same mask for every head
        p = self.dropout if self.training else 0.0
        if need_weights or (mask is not None and mask.is_floating_point()):
            out, weights = scaled_dot_product_attention(q, keys, values, mask, p, self.training)
            weights = weights if need_weights else None
        else:
            out, weights = _attention_output(q, keys, values, mask, p), None
        if g > 1:
            out = _ungroup(out, g, Q)
            weights = None if weights is None else _ungroup(weights, g, Q)
        return self.out_proj(self.merge_heads(out)), weights  # (B, Q, D)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Args: query (B, Q, D), key (B, K, D), value (B, K, D), mask as in :meth:`attend`.
        Returns: output (B, Q, D) and, if asked, per-head weights (B, H, Q, K)."""
        keys, values = self.project_kv(key, value)
        return self.attend(query, keys, values, mask, need_weights)


def _ungroup(x: Tensor, g: int, Q: int) -> Tensor:
    """(B / g, H, g·Q, E) → (B, H, Q, E): undo the grouping of queries in ``attend``."""
    M, H, _, E = x.shape
    return x.view(M, H, g, Q, E).transpose(1, 2).reshape(M * g, H, Q, E)


# Training under CPU bf16 autocast: sequences up to this length take the explicit path.
EXPLICIT_BF16_MAX_LENGTH = 192
# Decoding on a CPU in bfloat16: at most this many queries a row take the explicit path, in
# float32. A beam-search step asks one query a row, or, over a sentence's shared source keys,
# one per beam, and on so few the fused kernel took longer than the explicit product
# (benchmarks/speed/attention_decoding.md; test_2016 translated 6-13% faster on a Zen 5).
# In bfloat16 the explicit products were faster still once warm, but oneDNN builds a kernel
# for each new number of cached positions, and the first pass gained nothing.
EXPLICIT_DECODE_MAX_QUERIES = 16
# Without gradients on a CPU, at most this many queries a key row (a beam-search step's: one
# a beam over its own cache, one per beam over its sentence's source) take the C kernel of
# nn/step_attention.py, which reads the cache once in the type it is kept in.
STEP_KERNEL_MAX_QUERIES = 16
# On a GPU, every fused backend but cuDNN's: in bfloat16 PyTorch chose cuDNN's, which
# built a plan for each new shape, 13 ms of host time a call, and beam search asks a new
# length every step (an H100 translated 18× slower in bf16 than in fp32; see
# benchmarks/speed/gpu_h100.md)
GPU_BACKENDS = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


def _attention_output(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, p: float) -> Tensor:
    """Attention on (B, H, L, Dh) inputs without the weights: ``F.scaled_dot_product_attention``,
    except under CPU bfloat16 autocast.

    On a CPU, PyTorch 2.13's fused kernel runs forward + backward three to four times slower
    in bfloat16 than in float32, and for the short sequences of Multi30k and of the patch
    forecaster the explicit softmax(QKᵀ/√d)V with bfloat16 matrix products is 1.7–2.5×
    faster than the fused kernel in float32 (two threads); at 336 steps it is slower
    (``benchmarks/speed/attention.py``, ``benchmarks/speed/attention.md``). So when training
    in bfloat16 on a CPU, sequences up to ``EXPLICIT_BF16_MAX_LENGTH`` take the explicit path,
    and a decoding step's few queries (``EXPLICIT_DECODE_MAX_QUERIES``) the explicit path in
    float32; longer ones, and the rest of inference, the fused kernel in float32 (autocast
    would cast it back to bfloat16).
    """
    if q.device.type == "cpu" and q.dtype == torch.bfloat16:
        short = max(q.shape[-2], k.shape[-2]) <= EXPLICIT_BF16_MAX_LENGTH
        if short and torch.is_grad_enabled():
            return _explicit_output(q, k, v, mask, p)
        few = q.shape[-2] <= EXPLICIT_DECODE_MAX_QUERIES and not torch.is_grad_enabled()
        attention = _explicit_output if few else F.scaled_dot_product_attention
        with torch.autocast("cpu", enabled=False):
            out = attention(q.float(), k.float(), v.float(), mask, p)
        return out.to(q.dtype)
    if q.device.type == "cuda":
        with sdpa_kernel(GPU_BACKENDS):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)


def _explicit_output(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, p: float) -> Tensor:
    return scaled_dot_product_attention(q, k, v, mask, p, training=p > 0)[0]
