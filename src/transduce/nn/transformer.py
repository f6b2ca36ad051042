"""The encoder–decoder Transformer (Vaswani et al. 2017, §3, Figure 1).

Legend: B batch, S source length, T target length, P cached target positions, D d_model,
V vocabulary size, H heads.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from torch import Tensor, nn

from transduce.nn.cache import DecoderCache, LayerCache
from transduce.nn.layers import DecoderLayer, EncoderLayer
from transduce.nn.masks import subsequent_mask
from transduce.nn.positional import PositionalEncoding, TokenEmbedding


class Encoder(nn.Module):
    """A stack of :class:`EncoderLayer` and an optional final LayerNorm (pre-norm needs it).

    Args:
        layers: the layers, applied in order.
        norm: final normalisation, or None (the paper's post-norm has none).
    """

    def __init__(self, layers: list[EncoderLayer], norm: nn.Module | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = norm

    def forward(
        self, x: Tensor, mask: Tensor | None, need_weights: bool = False
    ) -> tuple[Tensor, list[Tensor | None]]:
        """Args: x (B, S, D), mask (B, 1, S). Returns: (B, S, D) and per-layer self-attention
        weights (B, H, S, S) (None unless asked for)."""
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask, need_weights)
            weights.append(w)
        return (self.norm(x) if self.norm is not None else x), weights


@dataclass(frozen=True)
class DecoderOutput:
    """What a decoder pass returns.

    Attributes:
        hidden: (B, T, D) final decoder states.
        cache: the cache extended by the T positions just decoded.
        self_weights: per layer, (B, H, T, P + T) or None.
        cross_weights: per layer, (B, H, T, S) or None.
    """

    hidden: Tensor
    cache: DecoderCache
    self_weights: list[Tensor | None]
    cross_weights: list[Tensor | None]


class Decoder(nn.Module):
    """A stack of :class:`DecoderLayer` and an optional final LayerNorm.

    Args: as :class:`Encoder`.
    """

    def __init__(self, layers: list[DecoderLayer], norm: nn.Module | None = None) -> None:
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.norm = norm

    def init_cache(self, memory: Tensor, memory_mask: Tensor | None) -> DecoderCache:
        """Project the encoder output into every layer's cross-attention keys/values, once.

        Args: memory (B, S, D); memory_mask (B, 1, S).
        """
        if memory_mask is None:
            memory_mask = memory.new_ones(memory.shape[0], 1, memory.shape[1], dtype=bool)
        layers = tuple(
            LayerCache(*layer.cross_attn.project_kv(memory, memory)) for layer in self.layers
        )
        return DecoderCache(layers, memory_mask)

    def forward(
        self, x: Tensor, cache: DecoderCache, self_mask: Tensor | None, need_weights: bool = False
    ) -> DecoderOutput:
        """Args: x (B, T, D) embedded new positions; self_mask (B|1, T, P + T)."""
        new_layers, self_w, cross_w = [], [], []
        for layer, layer_cache in zip(self.layers, cache.layers):
            x, layer_cache, (sw, cw) = layer(
                x, layer_cache, cache.memory_mask, self_mask, need_weights
            )
            new_layers.append(layer_cache)
            self_w.append(sw)
            cross_w.append(cw)
        hidden = self.norm(x) if self.norm is not None else x
        return DecoderOutput(hidden, replace(cache, layers=tuple(new_layers)), self_w, cross_w)


class Transformer(nn.Module):
    """The encoder–decoder model: embeddings + positions, encoder, decoder, generator.

    Build it with :func:`transduce.nn.builders.build_transformer`, which also ties the
    embeddings when the vocabulary is shared (§3.4).

    Args:
        encoder, decoder: the stacks.
        src_embed, tgt_embed: :class:`TokenEmbedding` (possibly the same module).
        positions: the :class:`PositionalEncoding` used on both sides.
        generator: the pre-softmax linear layer, D → V.
    """

    def __init__(
        self,
        *,
        encoder: Encoder,
        decoder: Decoder,
        src_embed: TokenEmbedding,
        tgt_embed: TokenEmbedding,
        positions: PositionalEncoding,
        generator: nn.Linear,
    ) -> None:
        super().__init__()
        self.encoder, self.decoder = encoder, decoder
        self.src_embed, self.tgt_embed = src_embed, tgt_embed
        self.positions = positions
        self.generator = generator

    def encode(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        """Args: src (B, S) ids, src_mask (B, 1, S). Returns: memory (B, S, D)."""
        memory, _ = self.encoder(self.positions(self.src_embed(src)), src_mask)
        return memory

    def encode_with_weights(
        self, src: Tensor, src_mask: Tensor | None
    ) -> tuple[Tensor, list[Tensor]]:
        """:meth:`encode`, also returning each layer's self-attention weights (B, H, S, S)."""
        return self.encoder(self.positions(self.src_embed(src)), src_mask, need_weights=True)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor | None = None,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
        need_weights: bool = False,
    ) -> DecoderOutput:
        """Decode target positions, from scratch (``memory``) or after a ``cache``.

        Args:
            tgt: (B, T) ids of the new positions (the whole shifted target, or the last token).
            memory, src_mask: (B, S, D) and (B, 1, S); used when there is no cache yet.
            tgt_mask: (B|1, T, P + T); defaults to the causal mask after the cached positions.
            cache: the state returned by the previous call, or None.
            need_weights: also return per-layer self/cross attention weights.

        Returns:
            :class:`DecoderOutput`; ``generator(out.hidden)`` gives the logits (B, T, V).
        """
        if cache is None:
            cache = self.decoder.init_cache(memory, src_mask)
        offset = cache.length
        if tgt_mask is None:
            tgt_mask = subsequent_mask(tgt.shape[1], offset, device=tgt.device)
        x = self.positions(self.tgt_embed(tgt), offset)  # (B, T, D)
        return self.decoder(x, cache, tgt_mask, need_weights)

    def features(
        self, src: Tensor, tgt: Tensor, src_mask: Tensor | None, tgt_mask: Tensor | None = None
    ) -> Tensor:
        """Teacher-forced pass up to the final decoder states (B, T, D), before the
        generator; training applies the generator only to non-padding positions."""
        return self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask).hidden

    def forward(
        self, src: Tensor, tgt: Tensor, src_mask: Tensor | None, tgt_mask: Tensor | None = None
    ) -> Tensor:
        """Teacher-forced pass. Args: src (B, S), tgt (B, T) shifted right, masks as above.
        Returns: logits (B, T, V)."""
        return self.generator(self.features(src, tgt, src_mask, tgt_mask))

    # The decoding protocol shared with the RNN baseline (see transduce.decoding).
    def start(self, src: Tensor, src_mask: Tensor | None) -> DecoderCache:
        """Encode a batch and return the empty decoder state for it."""
        return self.decoder.init_cache(self.encode(src, src_mask), src_mask)

    def step(self, tokens: Tensor, state: DecoderCache) -> tuple[Tensor, DecoderCache]:
        """Args: tokens (B, t) new target ids. Returns: logits (B, t, V) and the new state."""
        out = self.decode(tokens, cache=state)
        return self.generator(out.hidden), out.cache
