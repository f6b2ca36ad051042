"""A character model of each word: the whole word a subword belongs to, read letter by letter
by a convolution and max-pooled to one vector (Kim et al. 2016's character CNN, as taggers
since Ma & Hovy 2016 use it beside word embeddings). Added to every one of the word's
subword embeddings, it gives a word the model has never seen its shape, its affixes and its
case, which its subwords alone may hide.

Characters are ids from :func:`char_ids` (0 pads; 1 marks a word's start and end; others
are code points folded into ``CHAR_BUCKETS``), so a run needs no character vocabulary.

Legend: B batch, L tokens, C characters a word, E character embedding, W filters, D d_model.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

CHAR_BUCKETS = 256  # 0 pad, 1 word boundary, 2.. code points modulo 254 (ASCII is exact)
MAX_CHARS = 24  # boundaries included; a longer word keeps its first and last letters


def char_ids(word: str, width: int = MAX_CHARS) -> list[int]:
    """``word`` as ``width`` character ids: boundary, letters, boundary, then padding. A
    word too long keeps its first and last ``(width - 2) // 2`` letters (prefix and suffix,
    where a word's part of speech mostly shows)."""
    letters = [2 + ord(c) % (CHAR_BUCKETS - 2) for c in word]
    keep = width - 2
    if len(letters) > keep:
        letters = letters[: keep // 2] + letters[len(letters) - (keep - keep // 2) :]
    out = [1, *letters, 1] if letters else []
    return out + [0] * (width - len(out))


class CharCNN(nn.Module):
    """Character embeddings, one convolution of ``kernel`` letters, ReLU, a max over the
    word's letters, and a linear map to ``d_model``. A token with no characters (padding,
    the sentence's own first token) gets zeros.

    Args:
        d_model: the size of the subword embeddings it is added to.
        filters: W, the convolution's channels.
        dim: E, each character's embedding.
        kernel: letters a filter reads at once.
    """

    def __init__(self, d_model: int, *, filters: int = 128, dim: int = 32, kernel: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(CHAR_BUCKETS, dim, padding_idx=0)
        self.conv = nn.Conv1d(dim, filters, kernel, padding=kernel // 2)
        self.out = nn.Linear(filters, d_model)

    def forward(self, chars: Tensor) -> Tensor:
        """chars (B, L, C) ids → (B, L, D). Each distinct word of the batch is read once
        (a word's subwords, and a word that recurs, share its spelling)."""
        b, length, c = chars.shape
        words, where = distinct_rows(chars.reshape(b * length, c))
        x = self.embed(words).transpose(1, 2)  # (N, E, C), N distinct spellings
        x = torch.relu(self.conv(x))  # (N, W, C)
        real = (words != 0).unsqueeze(1)  # (N, 1, C)
        x = x.masked_fill(~real, 0).amax(-1)  # ReLU ≥ 0, so 0 never wins over a letter
        has = real.any(-1).to(x.dtype)  # (N, 1): a word at all
        return (self.out(x) * has)[where].reshape(b, length, -1)


def distinct_rows(ids: Tensor) -> tuple[Tensor, Tensor]:
    """The distinct rows of ``ids`` (N, C), values in [0, 256), and for each row the index
    of its own among them: what ``torch.unique(ids, dim=0, return_inverse=True)`` gives,
    up to the order of the distinct rows, at a tenth of its cost on a CPU (which compares
    rows one pair at a time: 0.7 ms for a tagger's batch of 768 subwords).

    Each row's bytes, read as 64-bit lanes, are ranked lane by lane, and the ranks combine
    into one exact key (less than N^lanes); the keys are then unique in one dimension."""
    n, c = ids.shape
    lanes = -(-c // 8)
    if n**lanes >= 2**63:  # the key would overflow
        return torch.unique(ids, dim=0, return_inverse=True)
    packed = F.pad(ids.to(torch.uint8), (0, -c % 8)).view(torch.int64)  # (N, lanes)
    key = torch.zeros(n, dtype=torch.int64, device=ids.device)
    for column in packed.unbind(1):
        _, rank = torch.unique(column, return_inverse=True)
        key = key * n + rank
    keys, inverse = torch.unique(key, return_inverse=True)
    first = torch.empty(len(keys), dtype=torch.long, device=ids.device)
    first.scatter_(0, inverse, torch.arange(n, device=ids.device))
    return ids[first], inverse
