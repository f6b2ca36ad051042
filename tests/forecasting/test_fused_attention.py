"""The fused LogSparse attention (nn/csrc/shifted_attention.c through fused.py):
the same results as PyTorch's path and the dense masked attention, in float32 and bfloat16,
with its dropout mask, in any layout, on any number of threads; and PyTorch's path where
the kernel cannot be built."""

import math

import pytest
import torch

from transduce.nn import native
from transduce.nn.attention import masked_softmax
from transduce.nn.dropout import keep_mask
from transduce.nn.forecasting import fused
from transduce.nn.forecasting.logsparse import (
    key_offsets,
    logsparse_mask,
    shifted_attention,
    shifted_attention_ops,
)

needs_kernel = pytest.mark.skipif(
    fused.kernel() is None, reason="the fused kernel needs a C compiler (cc, or $CC)"
)
MASKS = {
    "logsparse": logsparse_mask(45),
    "local": logsparse_mask(45, "local", window=6),
    "restart": logsparse_mask(45, "restart", restart=8),
}


def qkv(shape=(2, 3, 45, 8), dtype=torch.float32):
    torch.manual_seed(0)
    return [torch.randn(shape, dtype=dtype, requires_grad=True) for _ in "qkv"]


def dense(q, k, v, mask, keep=None, p=0.0):
    """The masked attention on the full (T, T) scores, the kept cells of ``keep`` (S, M, T)
    scaled by 1 / (1 − p) and the others dropped."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = masked_softmax(scores, mask=mask)
    if keep is not None:
        offsets, _ = key_offsets(mask)
        B, H, T, _ = q.shape
        factor = torch.zeros(B * H, T, T)
        steps = torch.arange(T)
        for m, o in enumerate(offsets):
            factor[:, steps[o:], steps[o:] - o] = keep[:, m, o:].float() / (1 - p)
        weights = weights * factor.view(B, H, T, T)
    return weights @ v


def grads(out, inputs):
    torch.manual_seed(1)
    return torch.autograd.grad(out, inputs, torch.randn(out.shape, dtype=out.dtype))


@needs_kernel
@pytest.mark.parametrize("pattern", MASKS)
@pytest.mark.parametrize("head_size", [8, 6])  # the kernel sums channels 4 at a time
def test_the_fused_kernel_equals_the_dense_attention_and_its_gradients(pattern, head_size):
    mask = MASKS[pattern]
    q, k, v = qkv((2, 3, 45, head_size))
    eval_dropout = torch.nn.Dropout(0.1).eval()
    out = shifted_attention(torch.stack((q, k), 1), v, key_offsets(mask), eval_dropout)
    expected = dense(q, k, v, mask)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    for got, want in zip(grads(out, (q, k, v)), grads(expected, (q, k, v))):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@needs_kernel
def test_the_fused_dropout_drops_the_cells_of_its_mask_and_scales_the_rest():
    mask = MASKS["logsparse"]
    q, k, v = qkv()
    offsets, valid = key_offsets(mask)
    torch.manual_seed(7)
    out = fused.fused_attention(torch.stack((q, k), 1), v, (offsets, valid), 0.25)
    torch.manual_seed(7)  # the same draws: the mask the kernel was given
    keep, p = keep_mask((6, len(offsets), 45), 0.25)
    expected = dense(q, k, v, mask, keep, p)
    assert 0.2 < 1 - keep.float().mean() < 0.3  # of 1,890 cells
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    for got, want in zip(grads(out, (q, k, v)), grads(expected, (q, k, v))):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@needs_kernel
def test_bfloat16_in_any_layout_on_any_number_of_threads():
    """Queries and keys as a convolution leaves them (time last behind the view) and values
    as a linear layer does ((B, T, H · D) behind): read where they lie, in bfloat16, and
    the gradients returned in the same layouts and type."""
    B, H, T, D = 2, 3, 45, 8
    torch.manual_seed(2)
    conv = torch.randn(B, 2 * H * D, T, dtype=torch.bfloat16).view(B, 2, H, D, T)
    linear = torch.randn(B, T, H * D, dtype=torch.bfloat16).view(B, T, H, D).transpose(1, 2)
    qk, v = (x.detach().requires_grad_() for x in (conv.transpose(-1, -2), linear))
    keys = key_offsets(MASKS["local"])
    eval_dropout = torch.nn.Dropout(0.0)
    outputs = []
    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            out = shifted_attention(qk, v, keys, eval_dropout)
            outputs.append((out, *grads(out, (qk, v))))
    finally:
        torch.set_num_threads(before)
    for one, two in zip(*outputs):
        assert torch.equal(one, two)  # each sequence is one thread's, whole
    out, dqk, dv = outputs[0]
    assert out.dtype == torch.bfloat16 and out.transpose(1, 2).is_contiguous()
    assert (dqk.stride(), dv.stride()) == (qk.stride(), v.stride())
    assert dqk.dtype == dv.dtype == torch.bfloat16
    reference = shifted_attention_ops(qk.float(), v.float(), keys, eval_dropout)
    torch.testing.assert_close(out.float(), reference, atol=1e-2, rtol=1e-2)
    # rounded to the nearest bfloat16, as PyTorch rounds (truncated, half would differ)
    assert (out == reference.to(torch.bfloat16)).float().mean() > 0.99


def test_without_a_compiler_the_attention_keeps_pytorchs_path(monkeypatch, tmp_path):
    mask = MASKS["restart"]
    q, k, v = qkv()
    monkeypatch.setattr(native, "_loaded", {})
    monkeypatch.setenv("TRANSDUCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    assert fused.kernel() is None and not fused.usable(q, k, v)
    out = shifted_attention(torch.stack((q, k), 1), v, key_offsets(mask), torch.nn.Dropout(0.0))
    torch.testing.assert_close(out, dense(q, k, v, mask), atol=1e-5, rtol=1e-5)
