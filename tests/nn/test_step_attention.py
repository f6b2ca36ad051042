"""The decoding step's attention kernel (nn/csrc/step_attention.c through
nn/step_attention.py): the explicit attention's outputs in float32 and bfloat16, for a
beam's own cache and for a sentence's beams over its shared source keys, masked or not, in
the layouts the cache holds, on any number of threads; what it declines goes to PyTorch's
path, and without the kernel a decoding step computes the same."""

import pytest
import torch

import transduce.nn.step_attention as step
from transduce.decoding.beam import beam_search
from transduce.nn import MultiHeadAttention, TransformerConfig, build_transformer
from transduce.nn.attention import scaled_dot_product_attention

needs_kernel = pytest.mark.skipif(
    step.kernel() is None, reason="the step kernel needs a C compiler (cc, or $CC)"
)


def explicit(q, keys, values, mask, heads):
    """The explicit path's attention in float32, q (B, Q, H·Dh) grouped over keys (M, …)."""
    B, Q, _ = q.shape
    M, H, K, Dh = keys.shape
    g = B // M
    qh = q.float().view(B, Q, H, Dh).transpose(1, 2)  # (B, H, Q, Dh)
    qh = qh.reshape(M, g, H, Q, Dh).transpose(1, 2).reshape(M, H, g * Q, Dh)
    m = None if mask is None else mask.reshape(mask.shape[0], 1, 1, K)
    out, _ = scaled_dot_product_attention(qh, keys.float(), values.float(), m)
    out = out.view(M, H, g, Q, Dh).transpose(1, 2).reshape(B, H, Q, Dh)
    return out.transpose(1, 2).reshape(B, Q, H * Dh)


def inputs(M, g, Q, K, dtype, mask_kind, layout):
    H, Dh = 4, 32
    torch.manual_seed(0)
    q = torch.randn(M * g, Q, H * Dh).to(dtype)
    if layout == "split":  # as MultiHeadAttention.split_heads leaves a projection
        keys = torch.randn(M, K, H, Dh).to(dtype).transpose(1, 2)
        values = torch.randn(M, K, H, Dh).to(dtype).transpose(1, 2)
    else:  # as the self-attention cache is after its concatenation
        keys, values = torch.randn(2, M, H, K, Dh).to(dtype).unbind(0)
    mask = None
    if mask_kind == "rows":
        mask = torch.rand(M, 1, K) > 0.4
        mask[0] = False  # a row with no key to attend: zeros, as the explicit path gives
        mask[1, 0, 0] = True
    elif mask_kind == "shared":
        mask = torch.rand(1, 1, K) > 0.4
        mask[0, 0, -1] = True
    return q, keys, values, mask, H


@needs_kernel
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("M,g,Q,K", [(6, 5, 1, 13), (9, 1, 1, 40), (3, 2, 3, 1), (2, 16, 1, 70)])
@pytest.mark.parametrize("mask_kind", [None, "rows", "shared"])
@pytest.mark.parametrize("layout", ["split", "contiguous"])
def test_the_kernel_gives_the_explicit_attention(dtype, M, g, Q, K, mask_kind, layout):
    q, keys, values, mask, H = inputs(M, g, Q, K, dtype, mask_kind, layout)
    with torch.no_grad():
        out = step.step_attention(q, keys, values, mask, H)
    expected = explicit(q, keys, values, mask, H)
    assert out is not None and out.dtype == dtype and out.shape == q.shape
    if dtype == torch.float32:
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    else:  # the float32 result rounded once: at most one bfloat16 step apart
        torch.testing.assert_close(out.float(), expected, atol=1e-6, rtol=2**-7)
    if mask_kind == "rows":
        assert not out[:g].any()


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_kernel_gives_the_same_on_any_number_of_threads(threads):
    q, keys, values, mask, H = inputs(7, 5, 1, 21, torch.bfloat16, "rows", "split")
    previous = torch.get_num_threads()
    try:
        with torch.no_grad():
            torch.set_num_threads(1)
            one = step.step_attention(q, keys, values, mask, H)
            torch.set_num_threads(threads)
            many = step.step_attention(q, keys, values, mask, H)
    finally:
        torch.set_num_threads(previous)
    assert torch.equal(one, many)


def test_the_kernel_declines_what_it_cannot_take():
    q, keys, values, mask, H = inputs(3, 5, 1, 9, torch.float32, "rows", "split")
    with torch.no_grad():
        assert step.step_attention(q, keys, values, mask.expand(3, 2, 9), H) is None  # Q axis
        assert step.step_attention(q, keys[..., :24], values[..., :24], mask, H) is None
        assert step.step_attention(q, keys, values, mask.float(), H) is None  # gates
        assert step.step_attention(q.repeat(4, 1, 1), keys, values, mask, H) is None  # g > 16
        assert step.step_attention(q, keys.transpose(2, 3), values, mask, H) is None
    assert step.step_attention(q, keys, values, mask, H) is None  # gradients wanted


@needs_kernel
def test_a_decoding_step_takes_the_kernel_only_without_gradients_or_weights(monkeypatch):
    calls = []
    kernel = step.step_attention

    def spy(*args):
        calls.append(args[0].shape)
        return kernel(*args)

    monkeypatch.setattr("transduce.nn.multi_head_attention.step_attention", spy)
    torch.manual_seed(0)
    attention = MultiHeadAttention(d_model=64, num_heads=4).eval()
    memory, query = torch.randn(3, 20, 64), torch.randn(15, 1, 64)
    padding = (torch.arange(20)[None, :] < torch.tensor([20, 9, 1])[:, None])[:, None, :]
    keys, values = attention.project_kv(memory, memory)
    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
        fast, _ = attention.attend(query, keys.bfloat16(), values.bfloat16(), padding)
        shown, weights = attention.attend(
            query, keys.bfloat16(), values.bfloat16(), padding, need_weights=True
        )
    assert len(calls) == 1 and weights is not None  # the views keep the explicit path
    torch.testing.assert_close(fast.float(), shown.float(), atol=0.02, rtol=0.02)
    with torch.autocast("cpu", torch.bfloat16):
        attention.attend(query, keys, values, padding)  # gradients: PyTorch's path
    assert len(calls) == 2  # asked, and declined
    with torch.no_grad():
        exact, _ = attention.attend(query, keys, values, padding)  # float32, kernel
        monkeypatch.setattr(step, "kernel", lambda: None)
        without, _ = attention.attend(query, keys, values, padding)  # float32, fused SDPA
    torch.testing.assert_close(exact, without, atol=1e-5, rtol=1e-5)


@needs_kernel
@pytest.mark.parametrize("bf16", [False, True])
def test_beam_search_finds_the_same_with_and_without_the_kernel(monkeypatch, bf16):
    torch.manual_seed(0)
    config = TransformerConfig(src_vocab_size=40, d_model=64, d_ff=128, num_heads=4)
    model = build_transformer(config).eval()  # head size 16: the kernel's smallest
    with torch.no_grad():
        model.generator.weight[2] += 0.2  # EOS: sentences end within a few steps
    src = torch.randint(3, 40, (5, 7))
    src[1, 4:] = 0
    mask = (src != 0)[:, None, :]

    def search():
        with torch.autocast("cpu", torch.bfloat16, enabled=bf16):
            return beam_search(model, src, mask, 1, 2, beam_size=4, nbest=2, extra_len=8)

    calls = []
    kernel = step.step_attention
    monkeypatch.setattr(
        "transduce.nn.multi_head_attention.step_attention",
        lambda *a: calls.append(1) or kernel(*a),
    )
    fast = search()
    assert calls  # the steps took the kernel
    monkeypatch.setattr(step, "kernel", lambda: None)
    slow = search()
    assert [[h.tokens for h in s] for s in fast] == [[h.tokens for h in s] for s in slow]
    for a, b in zip(sum(fast, []), sum(slow, [])):
        assert a.score == pytest.approx(b.score, abs=1e-4 if not bf16 else 2e-2)
