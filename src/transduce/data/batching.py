"""Batching by tokens with length buckets, and filtering of training pairs by length."""

from __future__ import annotations

import random
from collections import Counter
from typing import Sequence

from torch import Tensor

from transduce.data.vocab import pad_batch


def filter_pairs(
    src: Sequence[list[int]], tgt: Sequence[list[int]], max_len: int, max_ratio: float
) -> tuple[list[int], Counter]:
    """Indices of the pairs fit for training, and a count of the others by reason.

    A pair is dropped when a side is empty, longer than ``max_len`` subwords, or when one side
    is more than ``max_ratio`` times longer than the other (likely misaligned).
    """
    keep, dropped = [], Counter()
    for i, (s, t) in enumerate(zip(src, tgt)):
        if not s or not t:
            dropped["empty side"] += 1
        elif len(s) > max_len or len(t) > max_len:
            dropped[f"longer than {max_len} subwords"] += 1
        elif max(len(s), len(t)) > max_ratio * min(len(s), len(t)):
            dropped[f"length ratio above {max_ratio}"] += 1
        else:
            keep.append(i)
    return keep, dropped


def token_batches(
    lengths: Sequence[int], max_tokens: int, rng: random.Random | None = None
) -> list[list[int]]:
    """Group example indices into batches of at most ``max_tokens`` padded tokens.

    Examples are sorted by length (ties in random order when ``rng`` is given) so a batch
    holds similar lengths and little padding; the batch order is then shuffled with ``rng``.
    ``lengths[i]`` is the padded size that example ``i`` needs (e.g. max(src, tgt) + 2).
    """
    order = list(range(len(lengths)))
    if rng is not None:
        rng.shuffle(order)
    order.sort(key=lambda i: lengths[i])  # stable: equal lengths keep the shuffled order
    batches, current, longest = [], [], 0
    for i in order:
        longest_if_added = max(longest, lengths[i])
        if current and longest_if_added * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, longest_if_added = [], lengths[i]
        current.append(i)
        longest = longest_if_added
    if current:
        batches.append(current)
    if rng is not None:
        rng.shuffle(batches)
    return batches


def collate(
    src: Sequence[list[int]], tgt: Sequence[list[int]] | None, pad_id: int, bos_id: int, eos_id: int
) -> tuple[Tensor, Tensor | None]:
    """Source ids + EOS as (B, S); target framed as BOS … EOS as (B, T + 2), or None."""
    src_batch = pad_batch([list(s) + [eos_id] for s in src], pad_id)
    if tgt is None:
        return src_batch, None
    return src_batch, pad_batch([[bos_id] + list(t) + [eos_id] for t in tgt], pad_id)


def count_tokens(batch: Tensor, pad_id: int) -> int:
    return int((batch != pad_id).sum())
