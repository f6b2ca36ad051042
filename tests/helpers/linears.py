"""A tiny Transformer and a copy with its linear layers swapped (int8, packed bf16)."""

import copy

import torch
from torch import nn

from transduce.nn.builders import TransformerConfig, build_transformer


def tiny_and_swapped(swap):
    """(model, copy) where ``swap`` replaced every linear layer of the copy; checks that
    it says how many and leaves none behind."""
    torch.manual_seed(0)
    config = TransformerConfig(
        src_vocab_size=300, d_model=64, d_ff=128, num_heads=4,
        num_encoder_layers=2, num_decoder_layers=2,
    )  # fmt: skip
    model = build_transformer(config).eval()
    swapped = copy.deepcopy(model)
    linears = sum(type(m) is nn.Linear for m in model.modules())
    assert swap(swapped) == linears > 0
    assert not any(type(m) is nn.Linear for m in swapped.modules())
    return model, swapped
