"""Swapping a model's linear layers for inference-only stand-ins (int8 weights, packed
bfloat16 weights)."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn


def replace_linears(model: nn.Module, make: Callable[[nn.Linear], nn.Module]) -> int:
    """Replace, in place, every plain ``nn.Linear`` inside ``model`` by ``make(layer)``.
    Returns how many."""
    swaps = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is nn.Linear
    ]
    for parent, name, child in swaps:
        setattr(parent, name, make(child))
    return len(swaps)
