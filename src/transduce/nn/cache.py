"""The decoder's key/value cache for incremental decoding.

An explicit, immutable value: each decoding step takes a cache and returns a new one. Self-
attention keys/values grow by one position a step; cross-attention keys/values are projected
once per source sentence. ``reorder`` selects rows along the batch, as beam search needs.

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

    def reorder(self, indices: Tensor) -> LayerCache:
        """Keep batch rows ``indices`` (N,), in that order (rows may repeat)."""
        return LayerCache(*(_select(t, indices) for t in (self.cross_keys, self.cross_values,
                                                          self.self_keys, self.self_values)))


def _select(t: Tensor | None, indices: Tensor) -> Tensor | None:
    return None if t is None else t.index_select(0, indices)


@dataclass(frozen=True)
class DecoderCache:
    """All decoder layers' state plus the source mask the cross-attention needs.

    Attributes:
        layers: one :class:`LayerCache` per decoder layer.
        memory_mask: (B, 1, S) boolean, True at real source tokens.
    """

    layers: tuple[LayerCache, ...]
    memory_mask: Tensor

    @property
    def length(self) -> int:
        """P, the number of target positions already decoded."""
        keys = self.layers[0].self_keys
        return 0 if keys is None else keys.shape[2]

    def reorder(self, indices: Tensor) -> DecoderCache:
        """Keep batch rows ``indices`` (N,): e.g. the beams that survive a step."""
        return DecoderCache(
            tuple(layer.reorder(indices) for layer in self.layers),
            self.memory_mask.index_select(0, indices),
        )
