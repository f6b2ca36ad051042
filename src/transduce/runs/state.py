"""One training process per run (its lock), the settings a run was started with, and its
metrics file."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import math
import os
import shutil
import socket
import time
from pathlib import Path

import yaml

from transduce.config import apply_mapping, flatten_dict
from transduce.config_files import read_yaml
from transduce.errors import UserError
from transduce.families import trained_by
from transduce.io import check_writable, remove_staging, write_text
from transduce.runs.checkpoints import checkpoint_dir, load_checkpoint, step_checkpoints
from transduce.runs.layout import CONFIG, LOCK, METRICS, TEST_RESULTS


# ---------------------------------------------------------------- one writer at a time
@contextlib.contextmanager
def lock(
    run_dir: str | os.PathLike,
    advice: str = "wait for it to finish, or stop it and run again to resume",
):
    """Hold ``run_dir`` for one writer (a training, or a command that writes into the run);
    a second is refused with one line naming the holder, then ``advice``. The lock is the
    kernel's (``flock``), so a killed process never leaves it stuck. Sweeps what a killed
    writer left (staging files, a half-trained tokenizer). If this call created the
    directory and the run fails before writing its config.yaml, the directory is removed
    again: a failed start leaves nothing behind."""
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
        raise UserError(f"{run_dir}: in use by {holder}; {advice}") from None
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
        raise UserError(
            f"{steps[-1]}: records no settings and {path} is missing; use a new --run-dir"
        )
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
            raise UserError(
                f"{started[1]}: this run was started with {key}={old[key]!r}, "
                f"not {value!r}; resume with the same settings or use a new "
                "--run-dir"
            )


def write_config(run_dir: str | os.PathLike, cfg) -> None:
    write_text(
        Path(run_dir) / CONFIG, yaml.safe_dump(_plain(dataclasses.asdict(cfg)), sort_keys=False)
    )


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
        raise UserError(
            f"{path}: empty; delete it to resume with the settings the "
            "checkpoints record, or use a new --run-dir"
        )
    try:
        return apply_mapping(cls(), data, str(path))
    except UserError:  # settings this command lacks: perhaps the run of another command
        steps = step_checkpoints(run_dir)
        kind = load_checkpoint(steps[-1]).get("kind") if steps else None
        if trained_by(kind) and kind != getattr(cls, "KIND", kind):
            raise UserError(
                f"{run_dir}: a run of {trained_by(kind)}, not of "
                f"{trained_by(cls.KIND)}; give a new --run-dir, or resume it "
                f"with {trained_by(kind)}"
            ) from None
        raise


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


def scores(run_dir: str | os.PathLike) -> dict:
    """What a run has scored: ``last_validation``, its last validation row in metrics.jsonl,
    and ``test``, its test_results.json, each where present and readable."""
    found: dict = {}
    path = Path(run_dir) / METRICS
    if path.is_file():
        rows = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                rows.append(json.loads(line))
        valid = [r for r in rows if any(k.startswith(("valid_", "val_")) for k in r)]
        if valid:
            found["last_validation"] = valid[-1]
    path = Path(run_dir) / TEST_RESULTS
    if path.is_file():
        with contextlib.suppress(ValueError):
            found["test"] = json.loads(path.read_text(encoding="utf-8"))
    return _finite(found)


def _finite(value):
    """``value`` with every NaN or infinity, however deep, as None (files written before
    write_json refused them held some; /info must stay JSON)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value
