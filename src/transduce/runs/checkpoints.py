"""Checkpoints: the record a checkpoint holds, writing it atomically and loading it without
running pickled code, the step checkpoints of a run, ensembles of runs, and averaging."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import torch

from transduce import families
from transduce.errors import UserError
from transduce.io import atomic_path, check_output_file, write_text
from transduce.runs.layout import AVERAGED, BEST, BLEND, CHECKPOINTS, ENSEMBLE
from transduce.version import __version__

STEP_FILE = re.compile(r"step_(\d+)\.pt")  # matched whole: keep_step_3.pt is not ours
log = logging.getLogger("transduce.runs")


# ---------------------------------------------------------------- the checkpoint record
def record(kind: str, model: torch.nn.Module, model_config: dict, config: dict, **fields) -> dict:
    """A checkpoint: what model it holds (``kind``, ``model_config``, weights), the run's
    ``config``, the versions that wrote it, and whatever else the writer adds (training
    position, optimiser, RNG states, tokenizer fingerprint, a forecaster's scaler)."""
    families.of_kind(kind)  # a ValueError for a kind no family holds
    return {
        "kind": kind,
        "model": model.state_dict(),
        "model_config": model_config,
        "config": config,
        "versions": {"transduce": __version__, "torch": str(torch.__version__)},
        **fields,
    }


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write ``state`` so that ``path`` is either the old file or the whole new one."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


class DamagedCheckpoint(UserError):
    """A file torch cannot read as a checkpoint: foreign, or cut short (a full disk, a copy
    stopped half-way). Resuming a run catches it to name the file to delete."""

    def __init__(self, path: str | os.PathLike, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(
            f"{path}: not a transduce checkpoint ({reason}); give a .pt file written by transduce"
        )


def load_checkpoint(
    path: str | os.PathLike, kind: str | None = None, mmap: bool = False
) -> dict[str, Any]:
    """Load with ``weights_only=True`` (tensors, numbers, strings and containers only: no
    pickled code runs); with ``kind``, refuse a checkpoint of another kind of model. With
    ``mmap`` the tensors are mapped from the file, not read, for a look at the record."""
    state = _PEEKED.pop(_file_key(path), None)  # checkpoint_kind's look, used once
    try:
        if state is None:
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except FileNotFoundError:
        raise UserError(
            f"{path}: no such checkpoint; give a run directory that training "
            "has saved a checkpoint in"
        ) from None
    except Exception as error:  # torch raises several types for a damaged or foreign file
        raise DamagedCheckpoint(path, type(error).__name__) from None
    if not isinstance(state, dict) or "model" not in state or "model_config" not in state:
        raise UserError(f"{path}: not a transduce checkpoint (no model weights and config)")
    found = state.get("kind", "translation")  # written before records had a kind
    if kind is not None and found != kind:
        raise UserError(
            f"{path}: holds a {found} model, not a {kind} model; give a run "
            f"directory of the matching command"
        )
    return state


def build_model(path: str | os.PathLike, state: dict, build) -> torch.nn.Module:
    """``build(state["model_config"])`` with the checkpoint's weights loaded, or a UserError
    naming ``path`` when its config or weights do not fit (a damaged or foreign record)."""
    try:
        if not isinstance(state["model_config"], dict):
            raise TypeError("model_config is not a mapping")
        model = build(state["model_config"])
        model.load_state_dict(state["model"])
    except (KeyError, TypeError, ValueError, RuntimeError, AttributeError) as error:
        reason = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
        raise UserError(
            f"{path}: its model config or weights do not fit a transduce model "
            f"({type(error).__name__}: {reason}); use a checkpoint transduce wrote"
        ) from None
    return model


# ---------------------------------------------------------------- checkpoints of a run
def checkpoint_dir(run_dir: str | os.PathLike) -> Path:
    return Path(run_dir) / CHECKPOINTS


def step_checkpoints(run_dir: str | os.PathLike) -> list[Path]:
    """The run's own ``step_N.pt`` files (exact names only), oldest step first."""
    directory = checkpoint_dir(run_dir)
    if not directory.is_dir():
        return []
    found = [
        (int(m.group(1)), p) for p in directory.iterdir() if (m := STEP_FILE.fullmatch(p.name))
    ]
    return [p for _, p in sorted(found)]


def step_path(run_dir: str | os.PathLike, step: int) -> Path:
    return checkpoint_dir(run_dir) / f"step_{step}.pt"


def prune(run_dir: str | os.PathLike, keep_last: int) -> None:
    """Delete all but the newest ``keep_last`` step checkpoints (never a file of other name)."""
    for path in step_checkpoints(run_dir)[:-keep_last]:
        path.unlink()


def find_checkpoint(path: str | os.PathLike) -> tuple[Path, Path]:
    """(checkpoint, run directory) for a run directory or a checkpoint file in one.

    A run directory gives its averaged model if there is one, else its best, else its
    newest. Warns (on the "transduce" logger) when ``averaged.pt`` is older than the newest
    step checkpoint: the run trained on after it was averaged.
    """
    path = Path(path)
    if path.is_file():
        run_dir = path.parent.parent if path.parent.name == CHECKPOINTS else path.parent
        chosen = path
    elif not path.is_dir():
        raise UserError(f"{path}: no such run directory or checkpoint")
    elif (path / ENSEMBLE).is_file():
        raise UserError(
            f"{path}: an ensemble of several runs (its {ENSEMBLE}); give one of those runs here"
        )
    else:
        run_dir, steps = path, step_checkpoints(path)
        candidates = [c for c in (path / AVERAGED, checkpoint_dir(path) / BEST) if c.is_file()]
        if not candidates and not steps:
            raise UserError(f"{path}: no checkpoint yet; train first")
        chosen = candidates[0] if candidates else steps[-1]
        if chosen.name == AVERAGED and steps and steps[-1].stat().st_mtime > chosen.stat().st_mtime:
            log.warning(
                f"transduce: warning: {chosen} is older than {steps[-1]}; run "
                "transduce tune (or average) again to include the newer "
                "checkpoints"
            )
    return chosen, run_dir


def is_blend(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder that ``forecast blend --output`` wrote."""
    return (Path(path) / BLEND).is_file()


def ensemble_members(path: str | os.PathLike) -> list[Path] | None:
    """The member runs that the ensemble directory ``path`` lists, or None when ``path`` is
    not one (has no ``ensemble.json``)."""
    file = Path(path) / ENSEMBLE
    if not file.is_file():
        return None
    try:
        members = json.loads(file.read_text(encoding="utf-8"))["members"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise UserError(
            f"{file}: damaged ({type(error).__name__}: {error}); run transduce "
            "tune RUN RUN … --output again"
        ) from None
    if not isinstance(members, list) or not members or not all(isinstance(m, str) for m in members):
        raise UserError(
            f"{file}: 'members' must be a list of run directories; run "
            "transduce tune RUN RUN … --output again"
        )
    return [Path(path) / m for m in members]


def write_ensemble(directory: str | os.PathLike, members: list[Path], details: dict) -> None:
    """Record an ensemble of ``members`` in ``directory``, each as a path relative to it
    (so that the runs and the ensemble move together)."""
    directory = Path(directory)
    names = [os.path.relpath(Path(m).resolve(), directory.resolve()) for m in members]
    write_text(directory / ENSEMBLE, json.dumps({"members": names, **details}, indent=2) + "\n")


def average_checkpoints(paths: list[Path]) -> dict:
    """The element-wise mean of the models' weights; the rest of the record from the newest.

    Raises:
        UserError: when the checkpoints differ in kind, tokenizer or shape.
    """
    states = [load_checkpoint(p) for p in paths]
    newest = states[-1]
    for path, state in zip(paths, states):
        if (
            state.get("tokenizer") != newest.get("tokenizer")
            or state.get("kind") != newest.get("kind")
            or state["model"].keys() != newest["model"].keys()
        ):
            raise UserError(
                f"{path}: from another run than {paths[-1]}; average checkpoints of one run only"
            )
    averaged = {}
    for key, value in newest["model"].items():
        if value.is_floating_point():
            averaged[key] = (
                torch.stack([s["model"][key].double() for s in states]).mean(0).to(value.dtype)
            )
        else:
            averaged[key] = value  # integer buffers are not averaged
    keep = ("kind", "model_config", "config", "tokenizer", "versions", "extra", "step")
    return {
        **{k: newest[k] for k in keep if k in newest},
        "model": averaged,
        "averaged": [p.name for p in paths],
    }


def average_run(
    run_dir: str | os.PathLike, last: int, output: str | os.PathLike | None = None
) -> Path:
    """Average the last ``last`` step checkpoints of a run into ``run_dir/averaged.pt``."""
    if last < 1:
        raise UserError("--last must be at least 1")
    out = Path(output) if output else Path(run_dir) / AVERAGED
    check_output_file(out, "--output" if output else "the averaged checkpoint")
    steps = step_checkpoints(run_dir)
    if not steps:
        raise UserError(f"{run_dir}: no step checkpoints to average")
    chosen = steps[-last:]
    if len(chosen) < last:
        log.warning(
            f"transduce: note: {run_dir} has {len(steps)} step checkpoints, fewer "
            f"than --last {last}; averaging all {len(steps)}"
        )
    log.warning(f"transduce: averaging {', '.join(p.name for p in chosen)}")
    save_checkpoint(out, average_checkpoints(chosen))
    return out


def checkpoint_kind(path: str | os.PathLike) -> str:
    """The kind of model a run directory or checkpoint holds (translation, forecast,
    numbers)."""
    # mapped, not read: transduce.load asks before it loads the model itself. Unpickling
    # a record costs as much as its tensors are many (a quarter second for a run with its
    # optimizer's moments), so the next load of the same unchanged file takes this one.
    file = find_checkpoint(path)[0]
    state = load_checkpoint(file, mmap=True)
    _PEEKED.clear()
    key = _file_key(file)
    if key is not None:
        _PEEKED[key] = state
    return state.get("kind", "translation")


# The record checkpoint_kind last mapped, by its file's identity, for the one load after it.
_PEEKED: dict[tuple, dict] = {}


def _file_key(path: str | os.PathLike) -> tuple | None:
    """What tells a file from its replacement: where it is, its inode, its time and size."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (os.path.realpath(path), st.st_ino, st.st_mtime_ns, st.st_size)
