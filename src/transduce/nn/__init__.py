"""Attention mechanisms and the Transformer, written from the papers."""

from transduce.nn.attention import (
    AdditiveAttention,
    ScaledDotProductAttention,
    lengths_to_mask,
    masked_softmax,
    scaled_dot_product_attention,
)
from transduce.nn.bahdanau import BahdanauSeq2Seq, RNNState
from transduce.nn.builders import PRESETS, TransformerConfig, build_transformer, preset
from transduce.nn.cache import DecoderCache, LayerCache
from transduce.nn.layers import (
    DecoderLayer,
    EncoderLayer,
    PositionwiseFeedForward,
    PostNorm,
    PreNorm,
)
from transduce.nn.masks import padding_mask, subsequent_mask
from transduce.nn.multi_head_attention import MultiHeadAttention
from transduce.nn.pooling import LearnedNadarayaWatson, NadarayaWatson, gaussian_pooling
from transduce.nn.positional import PositionalEncoding, TokenEmbedding, sinusoidal_table
from transduce.nn.transformer import Decoder, DecoderOutput, Encoder, Transformer

__all__ = [
    "AdditiveAttention",
    "BahdanauSeq2Seq",
    "Decoder",
    "DecoderCache",
    "DecoderLayer",
    "DecoderOutput",
    "Encoder",
    "EncoderLayer",
    "LayerCache",
    "LearnedNadarayaWatson",
    "MultiHeadAttention",
    "NadarayaWatson",
    "PRESETS",
    "PositionalEncoding",
    "PositionwiseFeedForward",
    "PostNorm",
    "PreNorm",
    "RNNState",
    "ScaledDotProductAttention",
    "TokenEmbedding",
    "Transformer",
    "TransformerConfig",
    "build_transformer",
    "gaussian_pooling",
    "lengths_to_mask",
    "masked_softmax",
    "padding_mask",
    "preset",
    "scaled_dot_product_attention",
    "sinusoidal_table",
    "subsequent_mask",
]
