"""The decoder's key/value cache for incremental decoding.

An explicit, immutable value: each decoding step takes a cache and returns a new one. Self-
attention keys/values grow by one position a step; cross-attention keys/values are projected
once per source sentence. ``reorder`` selects rows along the batch, as beam search needs.

Beam search keeps one copy of the cross-attention keys/values per sentence, not per beam:
after :meth:`DecoderCache.expand_beams` each memory row serves ``group`` consecutive decoder
rows (the beams of one sentence), and cross-attention treats those beams as ``group`` queries
of the same sentence. Reordering beams within their sentence then copies only the
self-attention keys/values.

Legend: B batch (× beams), H heads, P cached positions, S source length, Dh head size.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor


@dataclass(frozen=True)
class LayerCache:
    """One decoder layer's state.

    Attributes:
        cross_keys, cross_values: (B, H, S, Dh), projected from the encoder output once.
        self_keys, self_values: (B, H, P, Dh), or None before the first step.
    """

    cross_keys: Tensor
    cross_values: Tensor
    self_keys: Tensor | None = None
    self_values: Tensor | None = None

    def extend(self, keys: Tensor, values: Tensor) -> LayerCache:
        """Append new self-attention keys/values (B, H, t, Dh) after the cached ones."""
        if self.self_keys is not None:
            keys = torch.cat([self.self_keys, keys], dim=2)  # (B, H, P + t, Dh)
            values = torch.cat([self.self_values, values], dim=2)
        return replace(self, self_keys=keys, self_values=values)

    def reorder(self, indices: Tensor, memory_rows: Tensor | None = None) -> LayerCache:
        """Keep self-attention rows ``indices`` (N,), in that order (rows may repeat), and
        cross-attention rows ``memory_rows`` (unchanged when None)."""
        return LayerCache(
            _select(self.cross_keys, memory_rows),
            _select(self.cross_values, memory_rows),
            _select(self.self_keys, indices),
            _select(self.self_values, indices),
        )


def _select(t: Tensor | None, indices: Tensor | None) -> Tensor | None:
    return t if t is None or indices is None else t.index_select(0, indices)


@dataclass(frozen=True)
class DecoderCache:
    """All decoder layers' state plus the source mask the cross-attention needs.

    Attributes:
        layers: one :class:`LayerCache` per decoder layer.
        memory_mask: (M, 1, S) boolean, True at real source tokens.
        group: decoder rows per memory row: B = M · group (beams per sentence; 1 otherwise).
    """

    layers: tuple[LayerCache, ...]
    memory_mask: Tensor
    group: int = 1

    @property
    def length(self) -> int:
        """P, the number of target positions already decoded."""
        keys = self.layers[0].self_keys
        return 0 if keys is None else keys.shape[2]

    def reorder(self, indices: Tensor, memory_rows: Tensor | None = None) -> DecoderCache:
        """Keep batch rows ``indices`` (N,): e.g. the beams that survive a step.

        With ``group`` > 1 the rows must stay within their sentences, in blocks of ``group``:
        row i of the result comes from sentence ``memory_rows[i // group]`` (``memory_rows``
        (N / group,) lists the sentences kept; None keeps them all, in order).
        """
        if self.group == 1:
            memory_rows = indices
        return DecoderCache(
            tuple(layer.reorder(indices, memory_rows) for layer in self.layers),
            _select(self.memory_mask, memory_rows),
            self.group,
        )

    def expand_beams(self, beams: int) -> DecoderCache:
        """Repeat each row ``beams`` times (rows b·beams … b·beams + beams − 1 copy row b)
        without copying the cross-attention keys/values: they are shared by the beams."""
        if self.group != 1:
            raise ValueError("expand_beams on a cache that is already grouped")
        rows = torch.arange(self.memory_mask.shape[0], device=self.memory_mask.device)
        rows = rows.repeat_interleave(beams)
        return DecoderCache(
            tuple(layer.reorder(rows, None) for layer in self.layers), self.memory_mask, beams
        )
