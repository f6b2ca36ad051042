"""The paper's encoder on its own, with a head: a label per sequence (classification) or per
token (tagging), as BERT uses the encoder. The stack, embeddings and positions are the
encoder–decoder's own (:mod:`transduce.nn.transformer`), built from the same config.

Legend: B batch, L tokens, D d_model, H heads, K labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from transduce.nn.builders import RESIDUALS, TransformerConfig, _init_matrices, build_encoder
from transduce.nn.chars import CharCNN
from transduce.nn.masks import padding_mask
from transduce.nn.positional import PositionalEncoding, TokenEmbedding
from transduce.nn.relative import RelativePositions
from transduce.nn.transformer import Encoder

# How a sequence becomes one vector for its label: the first token's output (a [CLS] token
# the tokenizer puts first, BERT's choice), the mean of the real tokens' outputs, or each
# feature's largest value over the real tokens (the max over time of Kim 2014's CNN).
POOLINGS = ("cls", "mean", "max")


@dataclass(frozen=True)
class EncoderOutput:
    """``logits`` (B, K) a sequence, or (B, L, K) a token; ``real`` (B, L), True at the
    tokens that are not padding (a loss or a score reads only those); ``hidden`` (B, L, D),
    the encoder's output; ``weights``, per layer (B, H, L, L) self-attention (None unless
    asked)."""

    logits: Tensor
    real: Tensor
    hidden: Tensor
    weights: list[Tensor | None]


class EncoderOnly(nn.Module):
    """Embeddings and positions, the encoder stack, and a linear head over its output.

    Args:
        encoder: the encoder stack (:class:`~transduce.nn.transformer.Encoder`).
        embed: token embeddings, scaled by √d_model.
        positions: the sinusoidal positions (and the embedding dropout).
        head: D → K.
        per_token: a label for every token (tagging) rather than for the sequence.
        pooling: for a sequence label, "cls", "mean" or "max" (see ``POOLINGS``).
        pad_id: the padding id: never attended to, never pooled, never labelled.
        chars: a character model of each token's word, added to its embedding (or None).
        relative: a score of each key's distance from the query, added in every layer's
            self-attention to the sinusoidal positions' information (or None).
    """

    def __init__(
        self,
        *,
        encoder: Encoder,
        embed: TokenEmbedding,
        positions: PositionalEncoding,
        head: nn.Linear,
        per_token: bool,
        pooling: str = "cls",
        pad_id: int = 0,
        chars: CharCNN | None = None,
        relative: RelativePositions | None = None,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
        self.encoder, self.embed, self.positions, self.head = encoder, embed, positions, head
        self.per_token, self.pooling, self.pad_id = per_token, pooling, pad_id
        self.chars, self.relative = chars, relative

    def forward(
        self,
        tokens: Tensor,
        need_weights: bool = False,
        at: Tensor | None = None,
        chars: Tensor | None = None,
    ) -> EncoderOutput:
        """Args: tokens (B, L) ids, padded with ``pad_id`` on the right. at: for a
        per-token head, a (B, L) bool of the positions to label; the logits are then (N, K),
        one row per True in row-major order (a masked language model reads its ~15% so,
        sparing the head's matmul over the rest). chars: (B, L, C) character ids of each
        token's word, for a model with a character model (and only for one)."""
        if (chars is None) != (self.chars is None):
            need = "needs" if self.chars is not None else "has no character model for"
            raise ValueError(f"this model {need} the words' characters (chars=)")
        mask = padding_mask(tokens, self.pad_id)  # (B, 1, L)
        x = self.embed(tokens)
        if self.chars is not None:
            x = x + self.chars(chars)
        keys = mask if self.relative is None else self.relative(mask)  # (B, 1|H, 1|L, L)
        hidden, weights = self.encoder(self.positions(x), keys, need_weights)
        if not self.per_token:
            read = self.pool(hidden, mask)
        else:
            read = hidden if at is None else hidden[at]
        return EncoderOutput(self.head(read), mask[:, 0], hidden, weights)  # (B,[L,]K)

    def pool(self, hidden: Tensor, mask: Tensor) -> Tensor:
        """(B, D): the first token's output, or the mean or the largest value of each
        feature over the real tokens."""
        if self.pooling == "cls":
            return hidden[:, 0]
        if self.pooling == "max":
            return hidden.masked_fill(~mask.transpose(1, 2), float("-inf")).amax(1)
        real = mask.transpose(1, 2).to(hidden.dtype)  # (B, L, 1)
        return (hidden * real).sum(1) / real.sum(1).clamp(min=1)


def pooled_rows(weights: Tensor, hidden: Tensor, pooling: str) -> Tensor:
    """(H, 1, L): one sentence's self-attention rows as its pooled vector reads them, from
    a layer's weights (H, L, L) and the encoder's output (L, D) of that sentence without
    padding: the [CLS] token's row; for mean pooling the mean of the rows; for max pooling
    the rows weighted by the share of the D features each token gave the pooled vector."""
    if pooling == "cls":
        return weights[:, :1]
    if pooling == "mean":
        return weights.mean(1, keepdim=True)
    share = torch.bincount(hidden.argmax(0), minlength=hidden.shape[0]).to(weights.dtype)
    return torch.einsum("i,hij->hj", share / hidden.shape[1], weights).unsqueeze(1)


class EncoderEnsemble(nn.Module):
    """Several :class:`EncoderOnly` of one shape, trained side by side from different
    initial weights and dropout, labelling by the mean of their probabilities (a deep
    ensemble, as ``members`` is for the forecasters).

    In training mode the logits are every member's, stacked on a new first axis
    (M, B[, L], K), so that the loss trains each member on its own error; in eval mode
    they are the log of the members' mean probabilities (B[, L], K), whose softmax is that
    mean. ``hidden`` and ``weights`` are the first member's: the members' features and
    heads are not aligned, so a mean over members would mix unrelated maps.
    """

    def __init__(self, members: list[EncoderOnly]) -> None:
        super().__init__()
        if len(members) < 2:
            raise ValueError("an ensemble needs at least two members")
        self.members = nn.ModuleList(members)
        self.per_token, self.pooling = members[0].per_token, members[0].pooling

    def forward(
        self,
        tokens: Tensor,
        need_weights: bool = False,
        at: Tensor | None = None,
        chars: Tensor | None = None,
    ) -> EncoderOutput:
        """The arguments of :meth:`EncoderOnly.forward`, given to every member."""
        outs = [
            member(tokens, need_weights and k == 0, at, chars)
            for k, member in enumerate(self.members)
        ]
        logits = torch.stack([out.logits.float() for out in outs])  # (M, B[, L], K)
        if not self.training:  # log of the mean probability, without a log of 0
            logits = logits.log_softmax(-1).logsumexp(0) - math.log(len(self.members))
        return EncoderOutput(logits, outs[0].real, outs[0].hidden, outs[0].weights)


def build_encoder_only(
    config: TransformerConfig,
    labels: int,
    per_token: bool,
    pooling: str = "cls",
    *,
    chars: int = 0,
    relative: int = 0,
) -> EncoderOnly:
    """An :class:`EncoderOnly` of ``config``'s encoder sizes (its decoder settings unused)
    and a head of ``labels`` outputs, initialised as the encoder–decoder is; with
    ``chars`` > 0, a character model of that many filters (:class:`CharCNN`); with
    ``relative`` > 0, scores of distances up to it (:class:`RelativePositions`)."""
    problems = config.problems(decoder=False)
    if problems:
        raise ValueError(problems[0][1])
    if config.norm not in RESIDUALS:
        raise ValueError(f"norm must be one of {', '.join(RESIDUALS)}, not {config.norm!r}")
    if config.src_vocab_size < 1 or labels < 1:
        raise ValueError("the vocabulary and the labels need at least one entry each")
    c = config
    encoder = build_encoder(c)
    head = nn.Linear(c.d_model, labels)
    _init_matrices(encoder, head)
    return EncoderOnly(
        encoder=encoder,
        embed=TokenEmbedding(c.src_vocab_size, c.d_model, c.pad_id),
        positions=PositionalEncoding(c.d_model, c.dropout, c.max_len),
        head=head,
        per_token=per_token,
        pooling=pooling,
        pad_id=c.pad_id,
        chars=CharCNN(c.d_model, filters=chars) if chars > 0 else None,
        relative=RelativePositions(num_heads=c.num_heads, window=relative) if relative else None,
    )
