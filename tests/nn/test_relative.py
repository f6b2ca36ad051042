"""Relative positions in the encoder's self-attention: a head's learned score of each signed,
clipped distance, equal to adding it to the attention scores, and padding still ignored."""

import math

import pytest
import torch

from tests.helpers.text import tiny_encoder
from transduce.nn.builders import TransformerConfig
from transduce.nn.encoder_only import build_encoder_only
from transduce.nn.relative import RelativePositions


def test_each_head_scores_the_signed_distance_clipped_at_the_window():
    relative = RelativePositions(num_heads=2, window=2)
    with torch.no_grad():
        relative.scores.copy_(torch.arange(10.0).view(2, 5))  # head h, distance d: 5h + d + 2
    mask = torch.tensor([[[True, True, True, True, False]]])  # (B, 1, L): the last is padding
    gates = relative(mask)
    assert gates.shape == (1, 2, 5, 5)
    for h in range(2):
        for i in range(5):
            for j in range(4):
                d = max(-2, min(2, j - i))
                assert gates[0, h, i, j].item() == pytest.approx(math.exp(5 * h + d + 2))
    assert (gates[..., 4] == 0).all()  # a padding key: no weight at any distance


def attention_by_hand(layer, x, scores):
    """One head's softmax(QKᵀ/√d + b)V through the layer's projections, b the given scores."""
    attn = layer.self_attn
    q, k, v = (attn.split_heads(p(x)) for p in (attn.q_proj, attn.k_proj, attn.v_proj))
    logits = q @ k.transpose(-2, -1) / math.sqrt(attn.head_size) + scores  # (B, H, L, L)
    return attn.out_proj(attn.merge_heads(torch.softmax(logits, -1) @ v))


def test_a_score_on_the_gate_is_a_score_added_to_the_attention_logits():
    torch.manual_seed(0)
    relative = RelativePositions(num_heads=2, window=3)
    torch.nn.init.normal_(relative.scores)
    config = TransformerConfig(
        src_vocab_size=20, d_model=8, d_ff=16, num_heads=2, num_encoder_layers=1, dropout=0.0
    )
    model = build_encoder_only(config, 3, per_token=True, relative=3).eval()
    model.relative.load_state_dict(relative.state_dict())
    layer = model.encoder.layers[0]
    x = torch.randn(1, 6, 8)
    mask = torch.ones(1, 1, 6, dtype=torch.bool)
    at = torch.arange(6)
    distance = (at[None] - at[:, None]).clamp(-3, 3) + 3
    by_hand = attention_by_hand(layer, x, relative.scores[:, distance])
    got, _ = layer.self_attn(x, x, x, relative(mask))
    torch.testing.assert_close(got, by_hand, atol=1e-5, rtol=1e-5)


def encoder(relative: int):
    return tiny_encoder(layers=2, relative=relative)


def test_at_zero_it_changes_nothing_then_it_learns_and_padding_stays_ignored():
    plain, relative = encoder(0), encoder(4)
    relative.load_state_dict(plain.state_dict(), strict=False)
    tokens = torch.tensor([[1, 5, 6, 7, 8, 0, 0], [1, 9, 10, 11, 12, 13, 14]])
    torch.testing.assert_close(relative(tokens).logits, plain(tokens).logits)
    torch.nn.init.normal_(relative.relative.scores)
    out = relative(tokens)
    assert (out.logits - plain(tokens).logits).abs().max() > 1e-3  # the scores are read
    alone = relative(tokens[:1, :5]).logits  # the first sentence without its padding
    torch.testing.assert_close(out.logits[0, :5], alone[0], atol=1e-5, rtol=1e-5)
    weights = relative(tokens, need_weights=True).weights
    assert all((w[0, :, :, 5:] == 0).all() for w in weights)  # padding never attended
    out.logits.sum().backward()
    assert relative.relative.scores.grad.abs().sum() > 0


def test_before_and_after_are_told_apart():
    """Sinusoidal positions alone score a key d before and d after alike when queries and
    keys share no direction; a relative score need not."""
    relative = RelativePositions(num_heads=1, window=2)
    with torch.no_grad():
        relative.scores.copy_(torch.tensor([[0.0, 2.0, 0.0, -1.0, 0.0]]))
    gates = relative(torch.ones(1, 1, 3, dtype=torch.bool))[0, 0]
    assert gates[1, 0].item() == pytest.approx(math.exp(2.0))  # the word before
    assert gates[1, 2].item() == pytest.approx(math.exp(-1.0))  # the word after


def test_a_window_below_one_is_refused():
    with pytest.raises(ValueError, match="window must be at least 1"):
        RelativePositions(num_heads=2, window=0)
