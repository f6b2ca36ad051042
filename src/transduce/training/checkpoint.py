"""Checkpoints: written atomically, loaded without executing pickled code."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import torch

from transduce.errors import UserError
from transduce.io import atomic_path

STEP_FILE = re.compile(r"step_(\d+)\.pt$")


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write ``state`` so that ``path`` is either the old file or the whole new one."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """Load with ``weights_only=True``: tensors, numbers, strings and containers only."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UserError(f"{path}: no such checkpoint") from None
    except Exception as error:  # torch raises several types for a damaged or foreign file
        raise UserError(f"{path}: not a transduce checkpoint ({type(error).__name__}); "
                        "give a .pt file written by transduce train or average") from None
    if not isinstance(state, dict) or "model" not in state or "model_config" not in state:
        raise UserError(f"{path}: not a transduce checkpoint (no model weights and config)")
    return state


def step_checkpoints(directory: str | os.PathLike) -> list[Path]:
    """``step_N.pt`` files in ``directory``, oldest step first."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir()
             if (m := STEP_FILE.search(p.name))]
    return [p for _, p in sorted(found)]


def prune(directory: str | os.PathLike, keep_last: int) -> None:
    """Delete all but the newest ``keep_last`` step checkpoints."""
    for path in step_checkpoints(directory)[:-keep_last]:
        path.unlink()
