import pytest
import torch
from torch import nn

from transduce.nn import TransformerConfig, build_transformer, padding_mask, preset, subsequent_mask
from transduce.nn.multi_head_attention import MultiHeadAttention

PAD = 0


def small_model(norm="post", **overrides):
    config = TransformerConfig(
        src_vocab_size=23,
        d_model=32,
        d_ff=64,
        num_heads=4,
        num_encoder_layers=2,
        num_decoder_layers=2,
        dropout=0.1,
        norm=norm,
        **overrides,
    )
    return build_transformer(config).eval()


def copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    q, k, v = theirs.in_proj_weight.chunk(3)
    qb, kb, vb = theirs.in_proj_bias.chunk(3)
    for proj, w, b in (
        (ours.q_proj, q, qb),
        (ours.k_proj, k, kb),
        (ours.v_proj, v, vb),
        (ours.out_proj, theirs.out_proj.weight, theirs.out_proj.bias),
    ):
        proj.weight.copy_(w)
        proj.bias.copy_(b)


def copy_linear_norm(ours, theirs):
    ours.weight.copy_(theirs.weight)
    ours.bias.copy_(theirs.bias)


@torch.no_grad()
def copy_from_torch_transformer(model, reference: nn.Transformer) -> None:
    for ours, theirs in zip(model.encoder.layers, reference.encoder.layers):
        copy_attention(ours.self_attn, theirs.self_attn)
        copy_linear_norm(ours.ffn.w_1, theirs.linear1)
        copy_linear_norm(ours.ffn.w_2, theirs.linear2)
        copy_linear_norm(ours.residuals[0].norm, theirs.norm1)
        copy_linear_norm(ours.residuals[1].norm, theirs.norm2)
    for ours, theirs in zip(model.decoder.layers, reference.decoder.layers):
        copy_attention(ours.self_attn, theirs.self_attn)
        copy_attention(ours.cross_attn, theirs.multihead_attn)
        copy_linear_norm(ours.ffn.w_1, theirs.linear1)
        copy_linear_norm(ours.ffn.w_2, theirs.linear2)
        for i, norm in enumerate((theirs.norm1, theirs.norm2, theirs.norm3)):
            copy_linear_norm(ours.residuals[i].norm, norm)
    copy_linear_norm(model.encoder.norm, reference.encoder.norm)
    copy_linear_norm(model.decoder.norm, reference.decoder.norm)


@pytest.mark.filterwarnings("ignore::UserWarning")  # nn.Transformer nested-tensor notes
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_parity_with_torch_transformer(norm):
    """Same weights, same outputs. nn.Transformer always ends each stack with a LayerNorm;
    the paper's post-norm model has none, so for the comparison we add one to ours."""
    reference = nn.Transformer(
        d_model=32,
        nhead=4,
        num_encoder_layers=2,
        num_decoder_layers=2,
        dim_feedforward=64,
        dropout=0.0,
        batch_first=True,
        norm_first=norm == "pre",
    ).eval()
    model = small_model(norm)
    if norm == "post":
        model.encoder.norm, model.decoder.norm = nn.LayerNorm(32), nn.LayerNorm(32)
    copy_from_torch_transformer(model, reference)
    src, tgt = torch.randn(3, 7, 32), torch.randn(3, 5, 32)
    lengths = torch.tensor([7, 3, 5])
    key_padding = torch.arange(7)[None] >= lengths[:, None]  # theirs: True = padding
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    with torch.no_grad():
        expected = reference(
            src,
            tgt,
            tgt_mask=causal,
            src_key_padding_mask=key_padding,
            memory_key_padding_mask=key_padding,
        )
        src_mask = ~key_padding[:, None, :]
        memory, _ = model.encoder(src, src_mask)
        out = model.decoder(
            tgt, model.decoder.init_cache(memory, src_mask), subsequent_mask(5)
        ).hidden
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_changing_a_future_target_token_changes_no_earlier_logit():
    model = small_model()
    src = torch.randint(4, 23, (2, 6))
    tgt = torch.randint(4, 23, (2, 8))
    with torch.no_grad():
        base = model(src, tgt, padding_mask(src, PAD))
        for j in range(1, 8):
            changed = tgt.clone()
            changed[:, j] = 4 + (changed[:, j] - 3) % 19  # a different non-special token
            logits = model(src, changed, padding_mask(src, PAD))
            torch.testing.assert_close(logits[:, :j], base[:, :j], atol=1e-6, rtol=0)
            assert not torch.allclose(logits[:, j], base[:, j])  # the change is visible at j


def test_appending_padding_changes_no_real_position():
    model = small_model()
    src, tgt = torch.randint(4, 23, (2, 6)), torch.randint(4, 23, (2, 5))
    padded_src = torch.cat([src, torch.full((2, 4), PAD)], 1)
    padded_tgt = torch.cat([tgt, torch.full((2, 3), PAD)], 1)
    with torch.no_grad():
        plain = model(src, tgt, padding_mask(src, PAD))
        padded = model(padded_src, padded_tgt, padding_mask(padded_src, PAD))
    torch.testing.assert_close(padded[:, :5], plain, atol=1e-5, rtol=1e-5)


def test_a_batch_equals_its_sentences_one_by_one():
    model = small_model()
    sources = [torch.randint(4, 23, (n,)) for n in (3, 7, 5)]
    targets = [torch.randint(4, 23, (n,)) for n in (4, 2, 6)]
    src = nn.utils.rnn.pad_sequence(sources, batch_first=True, padding_value=PAD)
    tgt = nn.utils.rnn.pad_sequence(targets, batch_first=True, padding_value=PAD)
    with torch.no_grad():
        batch = model(src, tgt, padding_mask(src, PAD))
        for i, (s, t) in enumerate(zip(sources, targets)):
            alone = model(s[None], t[None], padding_mask(s[None], PAD))
            torch.testing.assert_close(batch[i, : len(t)], alone[0], atol=1e-5, rtol=1e-5)


def test_shared_vocabulary_ties_all_three_embeddings():
    model = small_model()
    assert model.src_embed is model.tgt_embed
    assert model.generator.weight is model.tgt_embed.weight
    separate = build_transformer(
        TransformerConfig(src_vocab_size=20, tgt_vocab_size=30, d_model=16, d_ff=32, num_heads=2)
    )
    assert separate.src_embed is not separate.tgt_embed
    assert separate.generator.weight is separate.tgt_embed.weight
    assert separate.generator.out_features == 30


def test_pre_norm_is_a_module_choice():
    pre = small_model("pre")
    assert type(pre.encoder.layers[0].residuals[0]).__name__ == "PreNorm"
    assert isinstance(pre.encoder.norm, nn.LayerNorm) and small_model().encoder.norm is None
    with pytest.raises(ValueError, match="norm"):
        build_transformer(TransformerConfig(src_vocab_size=10, norm="sandwich"))


def test_presets_have_the_papers_sizes():
    """Table 3: base ≈ 65M and big ≈ 213M parameters (37k shared BPE vocabulary)."""
    with torch.device("meta"):
        base = build_transformer(preset("base", 37000))
        big = build_transformer(preset("big", 37000))
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731  (tied counted once)
    assert 60e6 < count(base) < 66e6
    assert 205e6 < count(big) < 215e6
    assert (preset("base", 1).num_heads, preset("base", 1).d_ff) == (8, 2048)
    assert (preset("big", 1).dropout, preset("big", 1).d_model) == (0.3, 1024)
    with pytest.raises(ValueError, match="preset"):
        preset("huge", 10)


def test_dropout_is_active_in_training_only():
    model = small_model()
    src, tgt = torch.randint(4, 23, (2, 6)), torch.randint(4, 23, (2, 5))
    model.train()
    assert not torch.allclose(model(src, tgt, None), model(src, tgt, None))
    model.eval()
    torch.testing.assert_close(model(src, tgt, None), model(src, tgt, None))
