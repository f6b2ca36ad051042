"""Setting up a training run: the run directory and its lock, the processes, logging and
threads, the task, then the engine's loop (:mod:`transduce.training.engine`)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from pathlib import Path

import torch

from transduce import runs
from transduce.device import retain_freed_memory
from transduce.errors import UserError
from transduce.logs import setup_logging
from transduce.nn import native
from transduce.training import distributed
from transduce.training.distributed import Session
from transduce.training.engine import Engine
from transduce.training.engine_config import EngineConfig


def train_task(
    make_task, config, run_dir: str | Path, extendable: tuple[str, ...]
) -> tuple[Engine, dict]:
    """Set up a run directory and train the task that ``make_task(session, log)`` builds.

    ``config`` is the run's whole config (a dataclass with an ``engine`` section). Rank 0
    holds the run's lock; every process checks ``config`` against the settings the run was
    started with. config.yaml is written (by rank 0) only once the task's data and the
    model are ready, so a start that fails leaves no settings that would lock the run out.
    Returns the engine (its ``model`` trained) and the last validation metrics.
    """
    cfg: EngineConfig = config.engine
    if not str(run_dir).strip():  # Path("") would be the working directory
        raise UserError("--run-dir is empty; name a folder for the run, e.g. --run-dir runs/a")
    run_dir = Path(run_dir)
    session = distributed.start(cfg.device, cfg.precision)
    try:
        with runs.lock(run_dir) if session.is_main else contextlib.nullcontext():
            result = _train(make_task, config, run_dir, extendable, session)
        # Every process reaches this point before any tears the group down: without it a
        # process that leaves first can make gloo abort its peer at exit ("terminate called
        # without an active exception", about one two-process run in ten here).
        session.barrier()
        return result
    finally:
        distributed.end(session)


def _train(make_task, config, run_dir: Path, extendable, session: Session):
    cfg: EngineConfig = config.engine
    runs.check_config(run_dir, config, extendable)
    if session.is_main:
        log = setup_logging(run_dir, runs.TRAIN_LOG)
    else:
        log = logging.getLogger(f"transduce.rank{session.rank}")
        log.addHandler(logging.NullHandler())
        log.propagate = False
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    if session.device.type == "cpu":
        retain_freed_memory()
    task = make_task(session, log)
    engine = Engine(
        task=task,
        cfg=cfg,
        session=session,
        run_dir=run_dir,
        config=dataclasses.asdict(config),
        log=log,
    )
    if session.is_main:
        runs.write_config(run_dir, config)
        runs.truncate_metrics(run_dir, engine.step)  # rows written after the last checkpoint
    params = sum(p.numel() for p in engine.model.parameters())
    threads, world = torch.get_num_threads(), session.world
    log.info(
        f"{task.kind}: {params:,} parameters; {session.device}, {session.precision}, "
        f"{threads} thread{'s' * (threads != 1)} × {world} process{'es' * (world != 1)}"
    )
    if session.device.type == "cpu":
        log.info(native.describe())
    try:
        return engine, engine.run()
    finally:
        engine.unwrap()
