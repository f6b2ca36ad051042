"""A token ↔ id vocabulary with the four special tokens every model here uses."""

from __future__ import annotations

from typing import Iterable, Sequence

import torch
from torch import Tensor

PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"


class Vocab:
    """Ids 0–3 are pad, bos, eos, unk; the given tokens follow in order.

    Args:
        tokens: the ordinary tokens (duplicates and specials are dropped).
    """

    def __init__(self, tokens: Iterable[str]) -> None:
        specials = [PAD, BOS, EOS, UNK]
        self.itos = specials + [t for t in dict.fromkeys(tokens) if t not in specials]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = range(4)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str], bos: bool = False, eos: bool = True) -> list[int]:
        """Token strings → ids, optionally framed by BOS/EOS; unknown tokens map to unk."""
        ids = [self.stoi.get(t, self.unk_id) for t in tokens]
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Ids → tokens, stopping at the first EOS and skipping pad/BOS."""
        tokens = []
        for i in ids:
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                tokens.append(self.itos[i])
        return tokens


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int) -> Tensor:
    """Right-pad id lists into a (B, L) long tensor, L the longest length."""
    width = max(len(s) for s in sequences)
    batch = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    for row, seq in enumerate(sequences):
        batch[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    return batch
