"""Greedy search with the decoder's cache: each step feeds only the newest token.

Legend: B batch, S source length, L output length, V vocabulary.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import Tensor


class Seq2Seq(Protocol):
    """What a model offers search: encode once, then step with an explicit state.

    The state must offer ``reorder(indices)`` (beam search selects rows with it). It may
    also offer ``expand_beams(K)``, to share per-sentence data among a sentence's K beams;
    its ``reorder(indices, memory_rows)`` then also takes the sentences kept (see
    :class:`transduce.nn.cache.DecoderCache`).
    """

    def start(self, src: Tensor, src_mask: Tensor) -> Any: ...

    def step(self, tokens: Tensor, state: Any) -> tuple[Tensor, Any]: ...


@torch.no_grad()
def greedy_search(
    model: Seq2Seq,
    src: Tensor,
    src_mask: Tensor,
    bos_id: int,
    eos_id: int,
    pad_id: int,
    max_len: int | Tensor,
) -> Tensor:
    """Pick the most probable token at each step until every sentence has ended.

    Args:
        model: a :class:`Seq2Seq` model (in eval mode).
        src: (B, S) source ids.
        src_mask: (B, 1, S).
        bos_id: the start-of-sentence id.
        eos_id: the end-of-sentence id.
        pad_id: the padding id.
        max_len: most tokens to generate per sentence (EOS included): one number, or (B,)
            limits, one per sentence, so that a sentence's output never depends on the
            other sentences of its batch.

    Returns:
        (B, L) generated ids without BOS, each row ending with EOS (unless cut by
        ``max_len``) and padded with ``pad_id`` after it; L ≤ max_len.
    """
    state = model.start(src, src_mask)
    tokens = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    limits = torch.as_tensor(max_len, device=src.device).expand(src.shape[0])  # (B,)
    outputs = []
    for step in range(int(limits.max())):
        logits, state = model.step(tokens, state)  # (B, 1, V)
        tokens = logits[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        tokens = tokens.masked_fill(finished[:, None], pad_id)
        outputs.append(tokens)
        finished |= (tokens[:, 0] == eos_id) | (limits <= step + 1)
        if finished.all():
            break
    return torch.cat(outputs, dim=1)  # (B, L)
