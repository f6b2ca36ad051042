"""The classic baseline: a GRU encoder–decoder with Bahdanau (additive) attention
(Bahdanau et al. 2015; d2l §11.4). It speaks the same decoding protocol as the Transformer
(``start`` / ``step``), so greedy search serves both.

The encoder reads the source forwards (d2l's form) or both ways, as the paper's does (§3.2):
each annotation is then [forward state; backward state], so it holds the words on both sides
of its position, and the decoder starts from tanh(W_s ←h_1) (appendix A.2.2).

Legend: B batch, S source length, T target steps, E embedding size, Hd hidden size, V vocab,
L layers, A annotation size (Hd forwards, 2 Hd both ways).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from transduce.nn.attention import AdditiveAttention


@dataclass(frozen=True)
class RNNState:
    """Decoder state: the encoder outputs (B, S, A), source mask (B, 1, S), and the GRU
    hidden state (num_layers, B, Hd)."""

    enc_outputs: Tensor
    src_mask: Tensor
    hidden: Tensor

    def reorder(self, indices: Tensor) -> RNNState:
        """Keep batch rows ``indices`` (N,)."""
        return RNNState(
            self.enc_outputs.index_select(0, indices),
            self.src_mask.index_select(0, indices),
            self.hidden.index_select(1, indices),
        )


class ForwardGRUEncoder(nn.Module):
    """A GRU reading the source left to right; its last state starts the decoder."""

    def __init__(
        self, *, embed_size: int, num_hiddens: int, num_layers: int, dropout: float
    ) -> None:
        super().__init__()
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, batch_first=True, dropout=dropout)
        self.annotation_size = num_hiddens

    def forward(self, packed: PackedSequence) -> tuple[PackedSequence, Tensor]:
        """Annotations (packed, A = Hd) and the decoder's first state (L, B, Hd)."""
        return self.rnn(packed)


class BidirectionalGRUEncoder(nn.Module):
    """Bahdanau et al.'s encoder: a GRU each way, annotations [→h_j; ←h_j] (§3.2), and the
    decoder's first state tanh(W_s ←h_1) from the backward GRU's last state (A.2.2)."""

    def __init__(
        self, *, embed_size: int, num_hiddens: int, num_layers: int, dropout: float
    ) -> None:
        super().__init__()
        self.rnn = nn.GRU(
            embed_size,
            num_hiddens,
            num_layers,
            batch_first=True,
            dropout=dropout,
            bidirectional=True,
        )
        self.W_s = nn.Linear(num_hiddens, num_hiddens)
        self.annotation_size = 2 * num_hiddens

    def forward(self, packed: PackedSequence) -> tuple[PackedSequence, Tensor]:
        """Annotations (packed, A = 2 Hd) and the decoder's first state (L, B, Hd)."""
        outputs, hidden = self.rnn(packed)  # hidden: (2 L, B, Hd), layer-major
        backward = hidden.unflatten(0, (-1, 2))[:, 1]  # (L, B, Hd): ←h_1 of each layer
        return outputs, torch.tanh(self.W_s(backward))


class BahdanauSeq2Seq(nn.Module):
    """GRU encoder; GRU decoder whose input is [attention context; previous embedding].

    Args:
        src_vocab_size: the source vocabulary's size.
        tgt_vocab_size: the target vocabulary's size.
        embed_size: E.
        num_hiddens: Hd.
        num_layers: GRU layers on each side.
        dropout: between GRU layers and on the attention weights.
        pad_id: padding id.
        bidirectional: read the source both ways, as Bahdanau et al. do (False: forwards).
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        *,
        embed_size: int = 64,
        num_hiddens: int = 128,
        num_layers: int = 1,
        dropout: float = 0.0,
        pad_id: int = 0,
        bidirectional: bool = False,
    ) -> None:
        super().__init__()
        rnn_dropout = dropout if num_layers > 1 else 0.0
        self.src_embed = nn.Embedding(src_vocab_size, embed_size, padding_idx=pad_id)
        encoder = BidirectionalGRUEncoder if bidirectional else ForwardGRUEncoder
        self.encoder = encoder(
            embed_size=embed_size,
            num_hiddens=num_hiddens,
            num_layers=num_layers,
            dropout=rnn_dropout,
        )
        annotation = self.encoder.annotation_size
        self.tgt_embed = nn.Embedding(tgt_vocab_size, embed_size, padding_idx=pad_id)
        self.attention = AdditiveAttention(
            query_size=num_hiddens, key_size=annotation, num_hiddens=num_hiddens, dropout=dropout
        )
        self.decoder = nn.GRU(
            embed_size + annotation, num_hiddens, num_layers, batch_first=True, dropout=rnn_dropout
        )
        self.generator = nn.Linear(num_hiddens, tgt_vocab_size)

    def start(self, src: Tensor, src_mask: Tensor) -> RNNState:
        """Encode src (B, S) with mask (B, 1, S); padding is packed away, so it never
        reaches the final hidden state."""
        lengths = src_mask.sum(-1).flatten().cpu()  # (B,)
        packed = pack_padded_sequence(
            self.src_embed(src), lengths, batch_first=True, enforce_sorted=False
        )
        outputs, hidden = self.encoder(packed)
        outputs, _ = pad_packed_sequence(
            outputs, batch_first=True, total_length=src.shape[1]
        )  # (B, S, A)
        return RNNState(outputs, src_mask, hidden)

    def decode(
        self, tokens: Tensor, state: RNNState, need_weights: bool = False
    ) -> tuple[Tensor, RNNState, Tensor | None]:
        """Decode tokens (B, T) one position at a time. Returns logits (B, T, V), the new
        state and, if asked, the attention weights (B, T, S)."""
        hidden, outputs, weights = state.hidden, [], []
        for x in self.tgt_embed(tokens).unbind(1):  # each (B, E)
            query = hidden[-1].unsqueeze(1)  # (B, 1, Hd): last layer's state
            context, w = self.attention(
                query,
                state.enc_outputs,
                state.enc_outputs,
                mask=state.src_mask,
                need_weights=need_weights,
            )
            out, hidden = self.decoder(torch.cat([context, x.unsqueeze(1)], -1), hidden)
            outputs.append(out)  # (B, 1, Hd)
            weights.append(w)
        logits = self.generator(torch.cat(outputs, 1))  # (B, T, V)
        new_state = RNNState(state.enc_outputs, state.src_mask, hidden)
        return logits, new_state, (torch.cat(weights, 1) if need_weights else None)

    def step(self, tokens: Tensor, state: RNNState) -> tuple[Tensor, RNNState]:
        """The decoding protocol: logits (B, T, V) for tokens (B, T), and the new state."""
        logits, state, _ = self.decode(tokens, state)
        return logits, state

    def forward(
        self, src: Tensor, tgt: Tensor, src_mask: Tensor, tgt_mask: Tensor | None = None
    ) -> Tensor:
        """Teacher-forced pass: logits (B, T, V). ``tgt_mask`` is unused (an RNN is causal)."""
        return self.step(tgt, self.start(src, src_mask))[0]
