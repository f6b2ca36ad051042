"""Swapping a model's linear layers for inference-only stand-ins (int8 weights, packed
bfloat16 weights)."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn


def replace_linears(
    model: nn.Module, make: Callable[[nn.Module], nn.Module], kind: type = nn.Linear
) -> int:
    """Replace, in place, every layer of exactly type ``kind`` (a plain ``nn.Linear``, or
    one of the stand-ins, to put it back) inside ``model`` by ``make(layer)``. Returns how
    many."""
    swaps = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is kind
    ]
    for parent, name, child in swaps:
        setattr(parent, name, make(child))
    return len(swaps)
