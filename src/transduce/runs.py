"""The run directory: its layout, its checkpoint record, and the one way to load what it holds.

::

    RUN/
      config.yaml      resolved settings, data paths absolute (``train --run-dir RUN`` resumes)
      spm.model        (translation) the tokenizer the checkpoints are tied to by fingerprint
      checkpoints/     step_N.pt (the newest ``keep_last``), best.pt (best validation metric)
      averaged.pt      after ``transduce average``
      decoding.json    after ``transduce tune`` (see transduce.decoding.defaults)
      train.log, metrics.jsonl, tensorboard/
      .lock            held by the one process training the run (the kernel frees it on exit)

An ensemble directory (``transduce tune RUN RUN … --out DIR``) holds only ``ensemble.json``
(its member runs, relative to it) and the ensemble's ``decoding.json``.

Nothing else reads or writes these files by name: training, translation, export, averaging
and forecasting all come through here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import logging
import os
import re
import shutil
import socket
import time
from pathlib import Path
from typing import Any

import torch
import yaml

from transduce import __version__
from transduce.config import apply_mapping, flatten_dict, read_yaml
from transduce.errors import UserError
from transduce.io import atomic_path, check_writable, remove_staging, write_text

CONFIG, TOKENIZER, METRICS, LOCK = "config.yaml", "spm.model", "metrics.jsonl", ".lock"
CHECKPOINTS, ENSEMBLE = "checkpoints", "ensemble.json"
BEST, AVERAGED = "best.pt", "averaged.pt"
STEP_FILE = re.compile(r"step_(\d+)\.pt")  # matched whole: keep_step_3.pt is not ours
KINDS = ("translation", "forecast", "numbers")
log = logging.getLogger("transduce.runs")


# ---------------------------------------------------------------- the checkpoint record
def record(kind: str, model: torch.nn.Module, model_config: dict, config: dict, **fields) -> dict:
    """A checkpoint: what model it holds (``kind``, ``model_config``, weights), the run's
    ``config``, the versions that wrote it, and whatever else the writer adds (training
    position, optimiser, RNG states, tokenizer fingerprint, a forecaster's scaler)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    return {"kind": kind, "model": model.state_dict(), "model_config": model_config,
            "config": config, "versions": {"transduce": __version__, "torch": str(torch.__version__)},
            **fields}


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Write ``state`` so that ``path`` is either the old file or the whole new one."""
    with atomic_path(path) as tmp:
        torch.save(state, tmp)


def load_checkpoint(path: str | os.PathLike, kind: str | None = None) -> dict[str, Any]:
    """Load with ``weights_only=True`` (tensors, numbers, strings and containers only: no
    pickled code runs); with ``kind``, refuse a checkpoint of another kind of model."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise UserError(f"{path}: no such checkpoint") from None
    except Exception as error:  # torch raises several types for a damaged or foreign file
        raise UserError(f"{path}: not a transduce checkpoint ({type(error).__name__}); "
                        "give a .pt file written by transduce") from None
    if not isinstance(state, dict) or "model" not in state or "model_config" not in state:
        raise UserError(f"{path}: not a transduce checkpoint (no model weights and config)")
    found = state.get("kind", "translation")  # written before records had a kind
    if kind is not None and found != kind:
        raise UserError(f"{path}: holds a {found} model, not a {kind} model; give a run "
                        f"directory of the matching command")
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
        raise UserError(f"{path}: its model config or weights do not fit a transduce model "
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
    found = [(int(m.group(1)), p) for p in directory.iterdir()
             if (m := STEP_FILE.fullmatch(p.name))]
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
        raise UserError(f"{path}: an ensemble of several runs (its {ENSEMBLE}); give one of "
                        "those runs here")
    else:
        run_dir, steps = path, step_checkpoints(path)
        candidates = [c for c in (path / AVERAGED, checkpoint_dir(path) / BEST) if c.is_file()]
        if not candidates and not steps:
            raise UserError(f"{path}: no checkpoint yet; train first")
        chosen = candidates[0] if candidates else steps[-1]
        if chosen.name == AVERAGED and steps and \
                steps[-1].stat().st_mtime > chosen.stat().st_mtime:
            log.warning(f"transduce: warning: {chosen} is older than {steps[-1]}; run "
                        "transduce tune (or average) again to include the newer "
                        "checkpoints")
    return chosen, run_dir


def ensemble_members(path: str | os.PathLike) -> list[Path] | None:
    """The member runs that the ensemble directory ``path`` lists, or None when ``path`` is
    not one (has no ``ensemble.json``)."""
    file = Path(path) / ENSEMBLE
    if not file.is_file():
        return None
    try:
        members = json.loads(file.read_text(encoding="utf-8"))["members"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise UserError(f"{file}: damaged ({type(error).__name__}: {error}); run transduce "
                        "tune RUN RUN … --out again") from None
    if not isinstance(members, list) or not members or \
            not all(isinstance(m, str) for m in members):
        raise UserError(f"{file}: 'members' must be a list of run directories; run "
                        "transduce tune RUN RUN … --out again")
    return [Path(path) / m for m in members]


def write_ensemble(directory: str | os.PathLike, members: list[Path], details: dict) -> None:
    """Record an ensemble of ``members`` in ``directory``, each as a path relative to it
    (so that the runs and the ensemble move together)."""
    directory = Path(directory)
    names = [os.path.relpath(Path(m).resolve(), directory.resolve()) for m in members]
    write_text(directory / ENSEMBLE, json.dumps({"members": names, **details}, indent=2)
               + "\n")


def average_checkpoints(paths: list[Path]) -> dict:
    """The element-wise mean of the models' weights; the rest of the record from the newest.

    Raises:
        UserError: when the checkpoints differ in kind, tokenizer or shape.
    """
    states = [load_checkpoint(p) for p in paths]
    newest = states[-1]
    for path, state in zip(paths, states):
        if state.get("tokenizer") != newest.get("tokenizer") or \
                state.get("kind") != newest.get("kind") or \
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
    keep = ("kind", "model_config", "config", "tokenizer", "versions", "extra", "step")
    return {**{k: newest[k] for k in keep if k in newest}, "model": averaged,
            "averaged": [p.name for p in paths]}


def average_run(run_dir: str | os.PathLike, last: int, output: str | os.PathLike | None = None
                ) -> Path:
    """Average the last ``last`` step checkpoints of a run into ``run_dir/averaged.pt``."""
    if last < 1:
        raise UserError("--last must be at least 1")
    steps = step_checkpoints(run_dir)
    if not steps:
        raise UserError(f"{run_dir}: no step checkpoints to average")
    chosen = steps[-last:]
    if len(chosen) < last:
        log.warning(f"transduce: note: {run_dir} has {len(steps)} step checkpoints, fewer "
                    f"than --last {last}; averaging all {len(steps)}")
    log.warning(f"transduce: averaging {', '.join(p.name for p in chosen)}")
    out = Path(output) if output else Path(run_dir) / AVERAGED
    check_writable(out.parent, "the averaged checkpoint")
    save_checkpoint(out, average_checkpoints(chosen))
    return out


# ---------------------------------------------------------------- one writer at a time
@contextlib.contextmanager
def lock(run_dir: str | os.PathLike):
    """Hold ``run_dir`` for one training process; a second is refused with one line naming
    the holder. The lock is the kernel's (``flock``), so a killed process never leaves it
    stuck. Sweeps what a killed writer left (staging files, a half-trained tokenizer). If
    this call created the directory and the run fails before writing its config.yaml, the
    directory is removed again: a failed start leaves nothing behind."""
    run_dir = Path(run_dir)
    check_writable(run_dir, "--run-dir")
    created = not run_dir.exists()
    run_dir.mkdir(parents=True, exist_ok=True)
    handle = open(run_dir / LOCK, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(handle)
        handle.close()
        raise UserError(f"{run_dir}: in use by {holder}; wait for it to finish, or stop it "
                        "and run again to resume") from None
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()} on {socket.gethostname()}\n")
        handle.flush()
        remove_staging(run_dir)
        remove_staging(checkpoint_dir(run_dir))
        yield run_dir
    except BaseException:
        if created and not (run_dir / CONFIG).exists():
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    finally:
        handle.close()


def _holder(handle, wait: float = 1.0) -> str:
    """Who holds the lock, as the holder wrote it; it writes its name just after taking the
    lock, so a reader that comes in between waits briefly for it."""
    deadline = time.monotonic() + wait
    while True:
        handle.seek(0)
        holder = handle.read().strip()
        if holder or time.monotonic() > deadline:
            return holder or "another process"
        time.sleep(0.02)


# ---------------------------------------------------------------- settings and metrics
def started_config(run_dir: str | os.PathLike, cls):
    """(settings, where they were read) of a run that has started, else None: its
    config.yaml, or when that is gone, the settings its newest checkpoint records."""
    path = Path(run_dir) / CONFIG
    if path.exists():
        return read_config(run_dir, cls), str(path)
    steps = step_checkpoints(run_dir)
    if not steps:
        return None
    state = load_checkpoint(steps[-1])
    if not isinstance(state.get("config"), dict):
        raise UserError(f"{steps[-1]}: records no settings and {path} is missing; "
                        "use a new --run-dir")
    return apply_mapping(cls(), state["config"], str(steps[-1])), str(steps[-1])


def check_config(run_dir: str | os.PathLike, cfg, extendable: tuple[str, ...]) -> None:
    """Refuse to resume ``run_dir`` with settings other than its own, except the leaf keys
    named in ``extendable`` (how long and where it trains)."""
    started = started_config(run_dir, type(cfg))
    if started is None:
        return
    # Read through the same class, so a file in the older flat layout compares key by key.
    old = flatten_dict(dataclasses.asdict(started[0]))
    new = flatten_dict(dataclasses.asdict(cfg))
    for key, value in new.items():
        if key.rsplit(".", 1)[-1] not in extendable and old[key] != value:
            raise UserError(f"{started[1]}: this run was started with {key}={old[key]!r}, "
                            f"not {value!r}; resume with the same settings or use a new "
                            "--run-dir")


def write_config(run_dir: str | os.PathLike, cfg) -> None:
    write_text(Path(run_dir) / CONFIG, yaml.safe_dump(_plain(dataclasses.asdict(cfg)),
                                                      sort_keys=False))


def _plain(value):
    """YAML-safe: tuples (list settings) as lists."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return list(value) if isinstance(value, tuple) else value


def read_config(run_dir: str | os.PathLike, cls):
    """The settings a run was started with (``train --run-dir RUN`` with no config file)."""
    path = Path(run_dir) / CONFIG
    if not path.is_file():
        raise UserError(f"{path}: missing; give a config file to start a new run")
    data = read_yaml(path)
    if not data:
        raise UserError(f"{path}: empty; delete it to resume with the settings the "
                        "checkpoints record, or use a new --run-dir")
    return apply_mapping(cls(), data, str(path))


def append_metrics(run_dir: str | os.PathLike, row: dict) -> None:
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(run_dir) / METRICS, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def truncate_metrics(run_dir: str | os.PathLike, step: int) -> None:
    """Drop the rows written after ``step`` (by a run that died before its next checkpoint),
    so that a resumed run does not repeat them, and any row torn by a kill."""
    path = Path(run_dir) / METRICS
    if not path.exists():
        return
    rows = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
    kept = [r for r in rows if (row := _row(r)) is not None and row.get("step", 0) <= step]
    if len(kept) != len(rows):
        write_text(path, "".join(kept))


def _row(line: str) -> dict | None:
    """A metrics row, or None for a torn one (the process died while appending it)."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) and line.endswith("\n") else None


# ---------------------------------------------------------------- loading a model
@dataclasses.dataclass
class LoadedTranslation:
    model: Any          # transduce.nn.Transformer, eval mode, on the CPU
    tokenizer: Any      # transduce.data.tokenizer.SubwordTokenizer
    checkpoint: Path
    state: dict
    run_dir: Path       # the run the checkpoint belongs to (its spm.model, decoding.json)


def load_translation(path: str | os.PathLike, verbose: bool = True) -> LoadedTranslation:
    """The Transformer and tokenizer of a run directory or checkpoint, checked to belong
    together (the checkpoint records the fingerprint of the run's ``spm.model``). A demo
    run (kind "numbers") gets its fixed word vocabulary. With ``verbose``, says which
    checkpoint it loaded."""
    from transduce.nn import TransformerConfig, build_transformer

    checkpoint, run_dir = find_checkpoint(path)
    state = load_checkpoint(checkpoint)
    kind = state.get("kind", "translation")
    if kind == "numbers":
        from transduce.data.numbers import NumbersTokenizer

        tokenizer = NumbersTokenizer()
    elif kind == "translation":
        tokenizer = _run_tokenizer(checkpoint, run_dir, state)
    else:
        raise UserError(f"{checkpoint}: holds a {kind} model, not a translation model; use "
                        "the forecast commands")
    model = build_model(checkpoint, state, lambda c: build_transformer(TransformerConfig(**c)))
    if verbose:
        log.warning(f"transduce: using {checkpoint}")
    return LoadedTranslation(model.eval(), tokenizer, checkpoint, state, run_dir)


def load_ensemble(paths: list[str | os.PathLike], verbose: bool = True):
    """(:class:`~transduce.decoding.ensemble.Ensemble` of the translation models in
    ``paths``, their shared tokenizer, the first member's run directory). Each path is a run
    directory (its averaged, else best, else newest checkpoint) or a checkpoint file; a
    UserError names the first member whose vocabulary differs."""
    from transduce.decoding.ensemble import Ensemble, check_vocabularies

    if not paths:
        raise UserError("an ensemble needs at least one run directory or checkpoint")
    loaded = [load_translation(p, verbose) for p in paths]
    check_vocabularies(paths, [m.tokenizer for m in loaded])
    return Ensemble([m.model for m in loaded]).eval(), loaded[0].tokenizer, loaded[0].run_dir


def _run_tokenizer(checkpoint: Path, run_dir: Path, state: dict):
    from transduce.data.tokenizer import SubwordTokenizer

    tokenizer_path = run_dir / TOKENIZER
    if not tokenizer_path.is_file():
        raise UserError(f"{tokenizer_path}: missing; a checkpoint needs the spm.model of "
                        "the run directory it was trained in")
    tokenizer = SubwordTokenizer(tokenizer_path)
    if state.get("tokenizer") != tokenizer.fingerprint:
        raise UserError(f"{checkpoint}: trained with another tokenizer than "
                        f"{tokenizer_path}; use the checkpoint's own run directory")
    return tokenizer


def checkpoint_kind(path: str | os.PathLike) -> str:
    """The kind of model a run directory or checkpoint holds (translation, forecast,
    numbers)."""
    return load_checkpoint(find_checkpoint(path)[0]).get("kind", "translation")
