"""BPE-dropout (Provilkov et al. 2020) over a SentencePiece BPE model, drawn by our own
generator.

SentencePiece samples BPE-dropout itself (``enable_sampling``), but its draws for one seed
differ from process to process (sentencepiece 0.2.3: the same seed gives the same draw
within a process, another in the next). The processes of a distributed run would then train
on different segmentations, batch them differently and fall out of step, and a resumed run
would not repeat its epoch. So the merges are replayed here, drawn by a generator seeded
with the seed alone (numpy's PCG64).

The procedure is the paper's: a word starts as its characters; at every step each merge
that applies (an adjacent pair whose concatenation is a piece) is dropped with probability
``p``, the best-scoring one left is made (the leftmost among equals, as SentencePiece does),
and the word is done when none is left. With ``p = 0`` this is SentencePiece's own BPE.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import Sequence

import numpy as np
import sentencepiece as spm

_WORDS = re.compile("▁?[^▁]+|▁")  # SentencePiece marks a word's start with ▁


class BpeDropout:
    """Samples segmentations of text with a SentencePiece BPE model's own merges.

    Args:
        sp: a loaded SentencePiece BPE model.
    """

    def __init__(self, sp: spm.SentencePieceProcessor) -> None:
        self.sp = sp
        self.unk_id = sp.unk_id()
        self.ids: dict[str, int] = {}
        self.scores: dict[str, float] = {}
        for i in range(sp.get_piece_size()):
            if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i) or sp.is_byte(i):
                continue  # never made by merging characters
            piece = sp.id_to_piece(i)
            self.ids[piece], self.scores[piece] = i, sp.get_score(i)
        # A word's states (its symbols) are numbered; ``transitions[n]`` lists the states
        # that state n's merges lead to, best first, filled in by after(n) when first
        # reached: the same states recur epoch after epoch, and numbers avoid hashing tuples
        # in the sampling loop.
        self._number: dict[tuple[str, ...], int] = {}
        self._states: list[tuple[str, ...]] = []
        self.transitions: list[list[int] | None] = []
        self._ids: list[list[int] | None] = []
        self._paths: dict[str, list[int]] = {}

    def _state(self, symbols: tuple[str, ...]) -> int:
        n = self._number.get(symbols)
        if n is None:
            n = self._number[symbols] = len(self._states)
            self._states.append(symbols)
            self.transitions.append(None)
            self._ids.append(None)
        return n

    def after(self, n: int) -> list[int]:
        """The states after each merge that applies to state ``n``, best first (higher
        score, then leftmost, as SentencePiece orders them)."""
        known = self.transitions[n]
        if known is None:
            state, scored = self._states[n], []
            for i in range(len(state) - 1):
                score = self.scores.get(state[i] + state[i + 1])
                if score is not None:
                    scored.append((-score, i))
            scored.sort()
            known = self.transitions[n] = [
                self._state(state[:i] + (state[i] + state[i + 1],) + state[i + 2 :])
                for _, i in scored
            ]
        return known

    def ids_of(self, n: int) -> list[int]:
        """The ids of state ``n``'s symbols, cached."""
        known = self._ids[n]
        if known is None:
            known = self._ids[n] = [self.ids.get(s, self.unk_id) for s in self._states[n]]
        return known

    def path(self, word: str) -> list[int]:
        """The word's states under plain BPE, from its characters to its segmentation."""
        known = self._paths.get(word)
        if known is None:
            known = [self._state(tuple(word))]
            while after := self.after(known[-1]):
                known.append(after[0])
            self._paths[word] = known
        return known

    def plain(self, word: str) -> list[int]:
        """The word's ids under plain BPE (SentencePiece's own segmentation)."""
        return self.ids_of(self.path(word)[-1])

    def corpus(self, texts: Sequence[str]) -> DropoutCorpus:
        return DropoutCorpus(self, texts)


class DropoutCorpus:
    """Texts split into words once, to draw a new segmentation of all of them every epoch.

    A draw is exact and cheap. At a step, the number of merges dropped before the one made
    is geometric (P(k) = p^k (1 - p); none left ends the word), so a step needs one number.
    The steps before a word's first drop are its plain merges, and their number is geometric
    too (P(kept = j) = (1 - p)^j p): drawn for every word at once, it leaves most words with
    their plain segmentation (a word of m merges with probability (1 - p)^m), and only the
    others are replayed from their first drop on, whose count is 1 + geometric (memoryless).
    """

    def __init__(self, bpe: BpeDropout, texts: Sequence[str]) -> None:
        self.bpe = bpe
        index: dict[str, int] = {}
        types: list[str] = []
        words: list[int] = []
        self.bounds = [0]
        for pieces in bpe.sp.encode(list(texts), out_type=str):  # normalised as SentencePiece
            for word in _WORDS.findall("".join(pieces)):
                t = index.get(word)
                if t is None:
                    t = index[word] = len(types)
                    types.append(word)
                words.append(t)
            self.bounds.append(len(words))
        self.words = np.array(words, dtype=np.int64)
        self.paths = [bpe.path(w) for w in types]  # each type's plain states
        self.plain_ids = [bpe.plain(w) for w in types]
        self.merges = np.array([len(path) - 1 for path in self.paths], dtype=np.int64)[self.words]

    def draw(self, p: float, seed: int) -> list[list[int]]:
        """Subword ids of every text with BPE-dropout ``p``; the same ``seed`` gives the same
        draw in every process and on every run."""
        if not 0.0 <= p < 1.0:
            raise ValueError(f"BPE-dropout probability {p} is outside [0, 1)")
        words = self.words.tolist()
        ids = [self.plain_ids[t] for t in words]
        if p > 0.0:
            generator = np.random.Generator(np.random.PCG64(seed))
            kept = generator.geometric(p, len(words)) - 1  # plain steps before the first drop
            redraw = np.flatnonzero(kept < self.merges)

            def skip_counts():  # merges dropped before the one made, step after step
                while True:
                    yield from (generator.geometric(1.0 - p, 4096) - 1).tolist()

            skipped = skip_counts().__next__
            table, expand, ids_of = self.bpe.transitions, self.bpe.after, self.bpe.ids_of
            for j, k in zip(redraw.tolist(), kept[redraw].tolist()):
                n, skip = self.paths[words[j]][k], skipped() + 1
                while True:
                    after = table[n]
                    if after is None:
                        after = expand(n)
                    if skip >= len(after):  # every merge dropped, or none applies: done
                        break
                    n, skip = after[skip], skipped()
                ids[j] = ids_of(n)
        b = self.bounds
        return [list(chain.from_iterable(ids[b[n] : b[n + 1]])) for n in range(len(b) - 1)]
