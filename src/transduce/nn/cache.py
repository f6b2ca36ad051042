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

from dataclasses import dataclass, field, replace

import torch
from torch import Tensor


class _Slab:
    """Room for the self-attention keys (or values) of the positions decoded so far,
    position-major: ``data`` (C, B, H, Dh), of which the first ``filled`` positions are
    written. Caches made one from another share it; a cache appends in place only when it
    is the one that filled it last, so no cache ever sees its positions change."""

    __slots__ = ("data", "filled")

    def __init__(self, data: Tensor, filled: int) -> None:
        self.data, self.filled = data, filled

    @classmethod
    def holding(cls, kv: Tensor, capacity: int) -> _Slab:
        """A new slab of ``capacity`` positions holding ``kv`` (B, H, P, Dh)."""
        B, H, P, Dh = kv.shape
        slab = cls(kv.new_empty(capacity, B, H, Dh), P)
        slab.data[:P] = kv.permute(2, 0, 1, 3)
        return slab

    def view(self) -> Tensor:
        """The filled positions as (B, H, P, Dh), a view."""
        return self.data[: self.filled].permute(1, 2, 0, 3)

    def append(self, kv: Tensor) -> None:
        """Write ``kv`` (B, H, t, Dh) after the filled positions (there is room)."""
        t = kv.shape[2]
        self.data[self.filled : self.filled + t] = kv.permute(2, 0, 1, 3)
        self.filled += t

    def select(self, rows: Tensor) -> _Slab:
        """A new slab of the same room holding batch rows ``rows`` (N,), in that order."""
        C, _, H, Dh = self.data.shape
        data = self.data.new_empty(C, rows.shape[0], H, Dh)
        torch.index_select(self.data[: self.filled], 1, rows, out=data[: self.filled])
        return _Slab(data, self.filled)


@dataclass(frozen=True)
class LayerCache:
    """One decoder layer's state.

    From the second step of incremental decoding on, the self-attention keys and values
    live in preallocated room (a slab, position-major) that grows by doubling: a step
    writes its position in place instead of copying the cached ones, and reordering copies
    them once, straight into a new slab (``benchmarks/speed/cache.py``). A full pass (one
    extension of T positions, as in training) keeps the projected tensors as they are.

    Attributes:
        cross_keys, cross_values: (B, H, S, Dh), projected from the encoder output once.
        self_keys, self_values: (B, H, P, Dh), or None before the first step (views of the
            slabs once there are slabs).
    """

    cross_keys: Tensor
    cross_values: Tensor
    self_keys: Tensor | None = None
    self_values: Tensor | None = None
    slabs: tuple[_Slab, _Slab] | None = field(default=None, repr=False, compare=False)

    def extend(self, keys: Tensor, values: Tensor) -> LayerCache:
        """Append new self-attention keys/values (B, H, t, Dh) after the cached ones."""
        if self.self_keys is None:
            return replace(self, self_keys=keys, self_values=values)
        if torch.is_grad_enabled() and (keys.requires_grad or self.self_keys.requires_grad):
            keys = torch.cat([self.self_keys, keys], dim=2)  # (B, H, P + t, Dh)
            values = torch.cat([self.self_values, values], dim=2)
            return replace(self, self_keys=keys, self_values=values, slabs=None)
        P, need = self.self_keys.shape[2], self.self_keys.shape[2] + keys.shape[2]
        slabs = self.slabs
        if slabs is None or slabs[0].filled != P or slabs[0].data.shape[0] < need:
            room = max(2 * need, 16)
            slabs = (_Slab.holding(self.self_keys, room), _Slab.holding(self.self_values, room))
        slabs[0].append(keys)
        slabs[1].append(values)
        return replace(self, self_keys=slabs[0].view(), self_values=slabs[1].view(), slabs=slabs)

    def reorder(self, indices: Tensor, memory_rows: Tensor | None = None) -> LayerCache:
        """Keep self-attention rows ``indices`` (N,), in that order (rows may repeat), and
        cross-attention rows ``memory_rows`` (unchanged when None)."""
        cross_keys = _select(self.cross_keys, memory_rows)
        cross_values = _select(self.cross_values, memory_rows)
        if indices is None:
            return replace(self, cross_keys=cross_keys, cross_values=cross_values)
        if self.slabs is None or self.slabs[0].filled != self.self_keys.shape[2]:
            keys, values = _select(self.self_keys, indices), _select(self.self_values, indices)
            return LayerCache(cross_keys, cross_values, keys, values)
        slabs = (self.slabs[0].select(indices), self.slabs[1].select(indices))
        return LayerCache(cross_keys, cross_values, slabs[0].view(), slabs[1].view(), slabs)


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
