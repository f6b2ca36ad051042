"""Several trained models searched as one: each step averages their output probabilities.

An ensemble of M models trained apart (other seeds) scores a continuation y by
log((1/M) · Σ_m p_m(y | prefix, source)), the mean of the members' probabilities, not of their
log-probabilities; greedy and beam search then run on it unchanged. The members must share
the vocabulary (the same subword pieces under the same ids); their sizes and depths may
differ. Each member keeps its own decoder cache; beam search reorders them all alike.

Legend: B batch (× beams), t new positions, V vocabulary, M members.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch import Tensor, nn

from transduce.errors import UserError


@dataclass(frozen=True)
class EnsembleState:
    """The members' search states, in member order. ``grouped[m]`` says whether member m's
    state shares per-sentence data among beams (see
    :meth:`transduce.nn.cache.DecoderCache.expand_beams`); ``sentences`` (B,) numbers the
    rows of the batch as it started."""

    states: tuple[Any, ...]
    grouped: tuple[bool, ...]
    sentences: Tensor

    def expand_beams(self, beams: int) -> EnsembleState:
        """Each sentence's row repeated for its ``beams`` beams, in every member."""
        rows = self.sentences.repeat_interleave(beams)
        states = tuple(
            s.expand_beams(beams) if hasattr(s, "expand_beams") else s.reorder(rows)
            for s in self.states
        )
        return EnsembleState(states, tuple(hasattr(s, "expand_beams") for s in self.states), rows)

    def reorder(self, indices: Tensor, memory_rows: Tensor | None = None) -> EnsembleState:
        """Keep rows ``indices`` in every member (``memory_rows``: the sentences kept, for the
        members whose states are grouped by sentence)."""
        return EnsembleState(
            tuple(
                s.reorder(indices, memory_rows) if g else s.reorder(indices)
                for s, g in zip(self.states, self.grouped)
            ),
            self.grouped,
            self.sentences.index_select(0, indices),
        )


class Ensemble(nn.Module):
    """Models that share a vocabulary, offered to search as one :class:`Seq2Seq`.

    ``step`` returns log-probabilities (a log-softmax leaves them unchanged), averaged in
    probability space. ``positions`` is the shortest positions table among the members, so
    that no member is given a source longer than it can encode.
    """

    def __init__(self, models: Sequence[Any]) -> None:
        super().__init__()
        if len(models) < 1:
            raise ValueError("an ensemble needs at least one model")
        self.members = tuple(models)  # search order; the modules among them, registered:
        self.networks = nn.ModuleList(m for m in models if isinstance(m, nn.Module))

    @property
    def positions(self) -> nn.Module:
        tables = [m.positions for m in self.members]
        return min(tables, key=lambda p: p.table.shape[0])

    def start(self, src: Tensor, src_mask: Tensor) -> EnsembleState:
        """Encode the batch once per member."""
        return EnsembleState(
            tuple(m.start(src, src_mask) for m in self.members),
            (False,) * len(self.members),
            torch.arange(src.shape[0], device=src.device),
        )

    def step(self, tokens: Tensor, state: EnsembleState) -> tuple[Tensor, EnsembleState]:
        """Args: tokens (B, t). Returns: (B, t, V) float32 log of the members' mean
        probability, and the new state."""
        log_probs, states = [], []
        for model, member_state in zip(self.members, state.states):
            logits, new = model.step(tokens, member_state)
            log_probs.append(torch.log_softmax(logits.float(), dim=-1))
            states.append(new)
        mean = torch.logsumexp(torch.stack(log_probs), dim=0) - math.log(len(log_probs))
        return mean, EnsembleState(tuple(states), state.grouped, state.sentences)


def same_vocabulary(a: Any, b: Any) -> bool:
    """Whether two tokenizers give every id the same piece (independent runs on the same
    data and ``vocab_size`` do: SentencePiece trains deterministically)."""
    return len(a) == len(b) and a.pieces(range(len(a))) == b.pieces(range(len(b)))


def check_vocabularies(paths: Sequence[Any], tokenizers: Sequence[Any]) -> None:
    """A UserError naming the first of ``paths`` whose tokenizer's vocabulary differs from
    the first one's."""
    for path, tokenizer in zip(paths[1:], tokenizers[1:]):
        if not same_vocabulary(tokenizers[0], tokenizer):
            raise UserError(
                f"{path}: its vocabulary differs from that of {paths[0]}; "
                "ensemble runs trained on the same data with the same vocab_size"
            )
