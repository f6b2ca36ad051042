"""Checkpoint averaging (Vaswani et al. 2017, §6.1: the last 5 or 20 checkpoints)."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from transduce.errors import UserError
from transduce.training.checkpoint import load_checkpoint, save_checkpoint, step_checkpoints


def average_checkpoints(paths: list[Path]) -> dict:
    """The element-wise mean of the models' weights; config and tokenizer from the newest.

    Raises:
        UserError: when the checkpoints differ in tokenizer or shape.
    """
    states = [load_checkpoint(p) for p in paths]
    newest = states[-1]
    for path, state in zip(paths, states):
        if state.get("tokenizer") != newest.get("tokenizer") or \
                state["model"].keys() != newest["model"].keys():
            raise UserError(f"{path}: from another run than {paths[-1]}; average checkpoints "
                            "of one run only")
    averaged = {}
    for key, value in newest["model"].items():
        if value.is_floating_point():
            averaged[key] = torch.stack([s["model"][key].double() for s in states]
                                        ).mean(0).to(value.dtype)
        else:
            averaged[key] = value  # integer buffers are not averaged
    return {"model": averaged, "model_config": newest["model_config"],
            "tokenizer": newest["tokenizer"], "config": newest.get("config", {}),
            "averaged": [p.name for p in paths]}


def average_run(run_dir: str | os.PathLike, last: int, output: str | os.PathLike | None = None
                ) -> Path:
    """Average the last ``last`` step checkpoints of a run into ``run_dir/averaged.pt``."""
    run_dir = Path(run_dir)
    steps = step_checkpoints(run_dir / "checkpoints")
    if not steps:
        raise UserError(f"{run_dir}: no step checkpoints to average")
    if last < 1:
        raise UserError("--last must be at least 1")
    chosen = steps[-last:]
    out = Path(output) if output else run_dir / "averaged.pt"
    save_checkpoint(out, average_checkpoints(chosen))
    return out
