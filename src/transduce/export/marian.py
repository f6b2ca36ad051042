"""Our weights in a Hugging Face ``MarianMTModel``, to compare speed with ``generate``.

Marian in transformers is the same post-norm encoder–decoder (scaled embeddings, sinusoidal
positions, ReLU when asked, tied output layer), so only names differ, plus the position
table: Hugging Face lays sines before cosines, so ours is copied in. That table is not saved
by ``save_pretrained`` (transformers rebuilds its own on loading), so the converted model is
meant to be used in memory, as the speed benchmark does.
"""

from __future__ import annotations

import torch

from transduce.data.tokenizer import SubwordTokenizer
from transduce.errors import UserError
from transduce.nn.transformer import Transformer


def to_marian(model: Transformer, tokenizer: SubwordTokenizer):
    """A ``transformers.MarianMTModel`` computing the same function as ``model`` (post-norm,
    tied embeddings), in eval mode."""
    try:
        from transformers import MarianConfig, MarianMTModel
    except ImportError:
        raise UserError("transformers is not installed; pip install transformers") from None
    if model.encoder.norm is not None:
        raise UserError("Marian is post-norm only; this model is pre-norm")
    enc, dec = model.encoder.layers, model.decoder.layers
    d_model = model.src_embed.weight.shape[1]
    config = MarianConfig(
        vocab_size=len(tokenizer),
        decoder_vocab_size=len(tokenizer),
        d_model=d_model,
        encoder_layers=len(enc),
        decoder_layers=len(dec),
        encoder_attention_heads=enc[0].self_attn.num_heads,
        decoder_attention_heads=dec[0].self_attn.num_heads,
        encoder_ffn_dim=enc[0].ffn.w_1.out_features,
        decoder_ffn_dim=dec[0].ffn.w_1.out_features,
        activation_function="relu",
        max_position_embeddings=model.positions.table.shape[0],
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        pad_token_id=tokenizer.pad_id,
        bos_token_id=tokenizer.bos_id,
        eos_token_id=tokenizer.eos_id,
        decoder_start_token_id=tokenizer.bos_id,
        forced_eos_token_id=None,
    )
    marian = MarianMTModel(config).eval()
    copy_weights(model, marian)
    return marian


def copy_weights(model: Transformer, marian) -> None:
    """Copy ``model``'s weights into a ``MarianMTModel`` of the same shape."""

    def same(dst, src):  # nn.Linear or nn.LayerNorm: weight and bias
        dst.weight.copy_(src.weight)
        dst.bias.copy_(src.bias)

    def attention(dst, src):
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            same(getattr(dst, name), getattr(src, name))

    m = marian.model
    with torch.no_grad():
        m.shared.weight.copy_(model.src_embed.weight)
        for stack in (m.encoder, m.decoder):
            stack.embed_positions.weight.copy_(model.positions.table)
        for ours, theirs in zip(model.encoder.layers, m.encoder.layers):
            attention(theirs.self_attn, ours.self_attn)
            same(theirs.self_attn_layer_norm, ours.residuals[0].norm)
            same(theirs.fc1, ours.ffn.w_1)
            same(theirs.fc2, ours.ffn.w_2)
            same(theirs.final_layer_norm, ours.residuals[1].norm)
        for ours, theirs in zip(model.decoder.layers, m.decoder.layers):
            attention(theirs.self_attn, ours.self_attn)
            same(theirs.self_attn_layer_norm, ours.residuals[0].norm)
            attention(theirs.encoder_attn, ours.cross_attn)
            same(theirs.encoder_attn_layer_norm, ours.residuals[1].norm)
            same(theirs.fc1, ours.ffn.w_1)
            same(theirs.fc2, ours.ffn.w_2)
            same(theirs.final_layer_norm, ours.residuals[2].norm)
        marian.lm_head.weight.copy_(model.generator.weight)
        marian.final_logits_bias.zero_()
