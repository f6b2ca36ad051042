import pytest
import torch
from torch import nn

from transduce.nn import MultiHeadAttention


def copy_from_torch(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """nn.MultiheadAttention packs W_q, W_k, W_v into one in_proj matrix."""
    q, k, v = theirs.in_proj_weight.chunk(3)
    qb, kb, vb = theirs.in_proj_bias.chunk(3)
    with torch.no_grad():
        for proj, w, b in ((ours.q_proj, q, qb), (ours.k_proj, k, kb), (ours.v_proj, v, vb)):
            proj.weight.copy_(w)
            proj.bias.copy_(b)
        ours.out_proj.weight.copy_(theirs.out_proj.weight)
        ours.out_proj.bias.copy_(theirs.out_proj.bias)


@pytest.mark.parametrize("need_weights", [True, False])
def test_parity_with_torch_multihead_attention(need_weights):
    theirs = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    ours = MultiHeadAttention(d_model=32, num_heads=4).eval()
    copy_from_torch(ours, theirs)
    query, memory = torch.randn(3, 5, 32), torch.randn(3, 7, 32)
    lengths = torch.tensor([7, 4, 1])
    key_padding = torch.arange(7)[None, :] >= lengths[:, None]  # theirs: True = ignore
    expected, expected_w = theirs(
        query, memory, memory, key_padding_mask=key_padding, average_attn_weights=False
    )
    out, weights = ours(
        query, memory, memory, mask=~key_padding[:, None, :], need_weights=need_weights
    )
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    if need_weights:
        torch.testing.assert_close(weights, expected_w, atol=1e-5, rtol=1e-5)


def test_parity_with_torch_causal_self_attention():
    theirs = nn.MultiheadAttention(16, 2, batch_first=True).eval()
    ours = MultiHeadAttention(d_model=16, num_heads=2).eval()
    copy_from_torch(ours, theirs)
    x = torch.randn(2, 6, 16)
    future = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)  # theirs: True = block
    expected, _ = theirs(x, x, x, attn_mask=future)
    out, _ = ours(x, x, x, mask=~future[None])
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_fast_path_equals_explicit_path():
    attention = MultiHeadAttention(d_model=64, num_heads=8, dropout=0.3).eval()
    query, memory = torch.randn(4, 9, 64), torch.randn(4, 11, 64)
    mask = torch.rand(4, 9, 11) > 0.3
    mask[..., 0] = True
    fast, none = attention(query, memory, memory, mask)
    explicit, weights = attention(query, memory, memory, mask, need_weights=True)
    assert none is None and weights.shape == (4, 8, 9, 11)
    torch.testing.assert_close(fast, explicit, atol=1e-6, rtol=1e-5)
    assert torch.all(weights.masked_select(~mask[:, None]) == 0)


def test_a_float_mask_of_gates_is_not_added_to_the_scores():
    """The fused kernel would add a float mask to the scores; gates of 0 and 1 must act as
    the boolean mask does, on either path."""
    attention = MultiHeadAttention(d_model=32, num_heads=4).eval()
    query, memory = torch.randn(3, 5, 32), torch.randn(3, 7, 32)
    mask = torch.rand(3, 5, 7) > 0.5
    mask[..., 0] = True
    expected, _ = attention(query, memory, memory, mask)
    gated, none = attention(query, memory, memory, mask.float())
    assert none is None
    torch.testing.assert_close(gated, expected, atol=1e-6, rtol=1e-5)


def test_dropout_acts_on_weights_in_training_only():
    attention = MultiHeadAttention(d_model=16, num_heads=2, dropout=0.5)
    x = torch.randn(2, 5, 16)
    attention.train()
    a, _ = attention(x, x, x, need_weights=True)
    b, _ = attention(x, x, x, need_weights=True)
    assert not torch.allclose(a, b)
    attention.eval()
    c, _ = attention(x, x, x)
    d, _ = attention(x, x, x)
    torch.testing.assert_close(c, d)


def test_bf16_autocast_on_cpu_stays_close_to_float32():
    attention = MultiHeadAttention(d_model=64, num_heads=4).eval()
    x = torch.randn(8, 10, 64)
    with torch.autocast("cpu", torch.bfloat16):
        low, _ = attention(x, x, x, mask=torch.ones(8, 1, 10, dtype=torch.bool))
    high, _ = attention(x, x, x, mask=torch.ones(8, 1, 10, dtype=torch.bool))
    assert low.dtype == torch.bfloat16
    torch.testing.assert_close(low.float(), high, atol=0.1, rtol=0.05)


def test_heads_must_divide_model_size():
    with pytest.raises(ValueError, match="divisible"):
        MultiHeadAttention(d_model=30, num_heads=4)


def test_dropout_acts_on_the_fused_path_used_in_training():
    """Training calls the fused (SDPA) path; its attention dropout must be on there too."""
    attention = MultiHeadAttention(d_model=16, num_heads=2, dropout=0.5).train()
    x = torch.randn(2, 5, 16)
    a, _ = attention(x, x, x)  # need_weights=False: the fused call
    b, _ = attention(x, x, x)
    assert not torch.allclose(a, b)
    attention.eval()
    torch.testing.assert_close(attention(x, x, x)[0], attention(x, x, x, need_weights=True)[0])


def spy_on_fused(monkeypatch) -> list:
    import transduce.nn.multi_head_attention as module

    seen, fused = [], module.F.scaled_dot_product_attention

    def spy(q, k, v, *args, **kwargs):
        seen.append((q.dtype, k.dtype, v.dtype, torch.is_autocast_enabled("cpu")))
        return fused(q, k, v, *args, **kwargs)

    monkeypatch.setattr(module.F, "scaled_dot_product_attention", spy)
    return seen


def test_cpu_bf16_autocast_runs_long_sequences_fused_in_float32(monkeypatch):
    from transduce.nn.multi_head_attention import EXPLICIT_BF16_MAX_LENGTH

    seen = spy_on_fused(monkeypatch)
    attention = MultiHeadAttention(d_model=64, num_heads=4).train()
    x = torch.randn(2, EXPLICIT_BF16_MAX_LENGTH + 1, 64)
    with torch.autocast("cpu", torch.bfloat16):
        out, _ = attention(x, x, x)
    assert seen == [(torch.float32, torch.float32, torch.float32, False)]
    assert out.dtype == torch.bfloat16  # the projections around it stay in bfloat16


def test_cpu_bf16_autocast_runs_short_sequences_on_the_explicit_path(monkeypatch):
    """Faster there in training (benchmarks/speed/attention.md): the fused kernel is not
    called, and values and gradients stay close to float32's, masked or not. Inference on
    as many queries keeps the fused kernel in float32."""
    from transduce.nn.multi_head_attention import EXPLICIT_BF16_MAX_LENGTH

    seen = spy_on_fused(monkeypatch)
    torch.manual_seed(0)
    attention = MultiHeadAttention(d_model=64, num_heads=4).eval()
    L = EXPLICIT_BF16_MAX_LENGTH
    x = torch.randn(3, L, 64)
    lengths = torch.tensor([L, L // 2, 1])
    padding = (torch.arange(L)[None, :] < lengths[:, None])[:, None, :]  # (B, 1, K)
    causal = torch.ones(L, L, dtype=torch.bool).tril()[None]  # (1, Q, K)
    for mask in (None, padding, causal):
        inputs = x.clone().requires_grad_()
        with torch.autocast("cpu", torch.bfloat16):
            low, _ = attention(inputs, inputs, inputs, mask=mask)
        low.float().sum().backward()
        assert seen == []  # no fused call, in either precision
        low_grad = inputs.grad
        inputs = x.clone().requires_grad_()
        high, _ = attention(inputs, inputs, inputs, mask=mask)
        high.sum().backward()
        assert low.dtype == torch.bfloat16
        torch.testing.assert_close(low.float(), high, atol=0.05, rtol=0.05)
        torch.testing.assert_close(low_grad, inputs.grad, atol=0.1, rtol=0.05)
        assert seen == [(torch.float32, torch.float32, torch.float32, False)]  # the reference
        seen.clear()
    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):  # inference: fused, float32
        attention(x, x, x)
    assert seen == [(torch.float32, torch.float32, torch.float32, False)]


def test_cpu_bf16_decoding_steps_take_the_explicit_path_in_float32(monkeypatch):
    """Without the step kernel (nn/step_attention.py; where there is no C compiler), a
    beam-search step's few queries (one a row, or a sentence's beams grouped over its
    shared keys) skip the fused kernel, which was slower there; values stay close to the
    fused float32 result. More queries in inference keep the fused kernel."""
    from transduce.nn import step_attention
    from transduce.nn.multi_head_attention import EXPLICIT_DECODE_MAX_QUERIES

    monkeypatch.setattr(step_attention, "kernel", lambda: None)
    seen = spy_on_fused(monkeypatch)
    torch.manual_seed(0)
    attention = MultiHeadAttention(d_model=64, num_heads=4).eval()
    memory = torch.randn(3, 20, 64)
    padding = (torch.arange(20)[None, :] < torch.tensor([20, 9, 1])[:, None])[:, None, :]
    keys, values = attention.project_kv(memory, memory)  # (3, H, 20, Dh): one per sentence
    for beams in (1, 5):  # (3·beams, 1, D) queries: beams > 1 share their sentence's keys
        query = torch.randn(3 * beams, 1, 64)
        with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
            low, _ = attention.attend(query, keys.bfloat16(), values.bfloat16(), padding)
        assert seen == [] and low.dtype == torch.bfloat16
        with torch.no_grad():
            high, _ = attention.attend(query, keys, values, padding)  # float32: fused
        assert len(seen) == 1
        torch.testing.assert_close(low.float(), high, atol=0.05, rtol=0.05)
        seen.clear()
    many = torch.randn(3, EXPLICIT_DECODE_MAX_QUERIES + 1, 64)
    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
        attention(many, memory, memory, padding)
    assert seen == [(torch.float32, torch.float32, torch.float32, False)]


def test_attention_dropout_acts_on_the_bf16_explicit_path():
    attention = MultiHeadAttention(d_model=16, num_heads=2, dropout=0.5).train()
    x = torch.randn(2, 5, 16)
    with torch.autocast("cpu", torch.bfloat16):
        a, _ = attention(x, x, x)
        b, _ = attention(x, x, x)
        attention.eval()
        c, _ = attention(x, x, x)
        d, _ = attention(x, x, x)
    assert not torch.allclose(a, b)
    torch.testing.assert_close(c, d)
