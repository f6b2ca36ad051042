"""Where to run and in which precision."""

from __future__ import annotations

import contextlib

import torch

PRECISIONS = ("auto", "bf16", "fp32")


def pick_device(name: str = "auto") -> torch.device:
    """"auto" takes a GPU when there is one, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def bf16_is_fast(device: torch.device) -> bool:
    """Whether the hardware multiplies bfloat16 natively (AVX-512 BF16/AMX, or a recent GPU)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
    return False


def resolve_precision(precision: str, device: torch.device) -> str:
    """Turn "auto" into "bf16" where that is fast, else "fp32"."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if precision == "auto":
        return "bf16" if bf16_is_fast(device) else "fp32"
    return precision


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    """bfloat16 autocast for "bf16"; a no-op for "fp32"."""
    return torch.autocast(device.type, torch.bfloat16, enabled=precision == "bf16")
