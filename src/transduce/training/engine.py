"""The one training loop. A task says what to train; the engine owns how.

A :class:`Task` supplies its model, optimiser, batches, summed loss and validation. The
engine owns the update (gradient accumulation, normalisation, clipping, optimiser and
schedule steps), mixed precision, the NaN/inf guard, budgets, validation cadence and early
stopping, checkpoints and exact resume (mid-epoch too), the progress bar, ``metrics.jsonl``,
TensorBoard, and distribution over processes (``DistributedDataParallel``).

Every process computes the same list of batches for an epoch (from the seed and the epoch
number; compared across processes as each epoch starts); an update takes the next
``accumulate × world`` of them and rank r trains on every world-th one from r. The summed
loss of all of them is divided by their units (target tokens, forecast values) summed over
all micro-batches and processes, so accumulation and several processes give the gradient of
the merged batch. Positions in the epoch count batches, not updates, so a checkpoint written
by N processes resumes on M.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from pathlib import Path
from typing import Any, Protocol, Sequence

import torch
from torch import Tensor, nn

from transduce import runs
from transduce.device import autocast, retain_freed_memory
from transduce.errors import UserError
from transduce.logs import progress, setup_logging
from transduce.training import distributed
from transduce.training.distributed import Session, check_same_batches
from transduce.training.engine_config import EXTENDABLE, EngineConfig  # noqa: F401 (re-export)


class Task(Protocol):
    """What a task gives the engine (translation, forecasting, the demo, ...)."""

    kind: str               # the checkpoint's kind of model (see runs.KINDS)
    metric: str             # the validation metric that picks best.pt
    higher_is_better: bool
    unit: str               # what the loss is summed over: "tokens", "values"

    def build_model(self) -> nn.Module: ...
    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any]: ...
    def batches(self, epoch: int) -> Sequence[Any]: ...        # the same on every process
    def loss(self, model: nn.Module, batch: Any) -> tuple[Tensor, int]: ...  # summed, units
    def validate(self, model: nn.Module) -> dict[str, float]: ...
    def record(self) -> dict: ...  # model_config, tokenizer, extra: what loading needs


class TrainingDiverged(UserError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


class _LossModule(nn.Module):
    """Runs ``task.loss`` as a module's forward, so DistributedDataParallel sees the whole
    computation (tasks may call any method of their model, not only its forward)."""

    def __init__(self, model: nn.Module, task: Task) -> None:
        super().__init__()
        self.model, self.task = model, task

    def forward(self, batch):
        return self.task.loss(self.model, batch)


class Engine:
    """Trains ``task`` in ``run_dir``, resuming from its newest step checkpoint."""

    PROGRESS = ("step", "epoch", "position", "best", "bad_validations", "elapsed")

    def __init__(self, task: Task, cfg: EngineConfig, session: Session, run_dir: Path,
                 config: dict, log) -> None:
        self.task, self.cfg, self.session, self.run_dir = task, cfg, session, Path(run_dir)
        self.config, self.log = config, log
        self.step = self.epoch = self.position = self.bad_validations = 0
        self.best = -math.inf if task.higher_is_better else math.inf
        self.elapsed, self.last_metrics, self.tensorboard = 0.0, {}, None
        self.saved_step, self.shown = -1, {}  # shown: the last validation, on the bar
        self.epoch_batches, self.used_lr = 1, 0.0  # this epoch's batches; the last update's rate
        torch.manual_seed(cfg.seed)  # the same initial weights in every process
        self.model = task.build_model().to(session.device)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer, self.schedule = (task.build_optimizer(self.model) if self.params
                                         else (None, None))
        self.scaler = torch.amp.GradScaler(session.device.type,
                                           enabled=session.precision == "fp16")
        self.runner = _LossModule(self.model, task)
        if session.world > 1 and self.params:
            from torch.nn.parallel import DistributedDataParallel

            ids = [session.device.index] if session.device.type == "cuda" else None
            self.runner = DistributedDataParallel(self.runner, device_ids=ids)
        torch.manual_seed(cfg.seed * 1000 + session.rank)  # dropout differs across processes
        steps = runs.step_checkpoints(self.run_dir)
        if steps:
            try:
                self.restore(runs.load_checkpoint(steps[-1], task.kind))
            except (KeyError, TypeError, ValueError, RuntimeError) as error:
                raise UserError(f"{steps[-1]}: cannot resume from it ({type(error).__name__}: "
                                f"{str(error).splitlines()[0][:200]}); delete it to resume "
                                "from the one before, or use a new --run-dir") from None
            log.info(f"resuming from {steps[-1]} (step {self.step}, epoch {self.epoch})")

    # ------------------------------------------------------------ state
    def state(self) -> dict:
        rng = self.session.gather(_rng_state(self.session.device))
        return runs.record(self.task.kind, self.model, config=self.config,
                           optimizer=self.optimizer.state_dict() if self.optimizer else {},
                           schedule=self.schedule.state_dict() if self.schedule else {},
                           grad_scaler=self.scaler.state_dict(), rng=rng,
                           **self.task.record(), **{k: getattr(self, k) for k in self.PROGRESS})

    def restore(self, state: dict) -> None:
        mine = self.task.record()
        if state.get("tokenizer") != mine.get("tokenizer"):
            raise UserError(f"{self.run_dir}/checkpoints: written with another tokenizer than "
                            "the run's; use a new --run-dir")
        if "data" in state and state["data"] != mine.get("data"):
            raise UserError(f"{self.run_dir}: its checkpoints were trained on other data than "
                            "this run's settings give (a changed csv?); give the run's own data "
                            "or use a new --run-dir")
        self.model.load_state_dict(state["model"])
        if self.optimizer is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        if self.schedule is not None:
            self.schedule.load_state_dict(state["schedule"])
        if state.get("grad_scaler"):
            self.scaler.load_state_dict(state["grad_scaler"])
        rng = state["rng"]
        if self.session.rank < len(rng):  # a process the checkpoint had: its own stream
            _set_rng_state(rng[self.session.rank], self.session.device)
        else:
            torch.manual_seed(self.cfg.seed * 1000 + self.session.rank + state["step"])
        for key in self.PROGRESS:
            setattr(self, key, state[key])
        self.saved_step = self.step

    def stop_reason(self) -> str | None:
        c = self.cfg
        if c.max_steps and self.step >= c.max_steps:
            return f"reached max_steps={c.max_steps}"
        if c.max_epochs and self.epoch >= c.max_epochs:
            return f"reached max_epochs={c.max_epochs}"
        if c.max_minutes and self.elapsed >= 60 * c.max_minutes:
            return (f"reached max_minutes={c.max_minutes} of training time (validations "
                    "are not counted)")
        if c.patience and self.bad_validations >= c.patience:
            return f"no {self.task.metric} gain in {c.patience} validations (patience)"
        return None

    # ------------------------------------------------------------ the loop
    def run(self) -> dict:
        """Train until a budget is spent; returns the metrics of the last validation."""
        if not self.params:  # nothing to learn (a baseline): validate and save once
            self.checkpoint()
            return self.last_metrics
        reason = self.stop_reason()
        if self.cfg.max_minutes:
            self.log.info(f"max_minutes={self.cfg.max_minutes} counts training time only; "
                          "validations add to the wall-clock time")
        with self._bar() as bar:
            while reason is None:
                batches = self.task.batches(self.epoch)
                check_same_batches(self.session, self.epoch, batches)
                if not batches:
                    raise UserError(f"no training batches in epoch {self.epoch + 1}: the "
                                    "training data is empty after filtering")
                per_update = self.cfg.accumulate * self.session.world
                self.epoch_batches = len(batches)
                while self.position < len(batches) and reason is None:
                    group = batches[self.position:self.position + per_update]
                    self.update(group, bar)
                    self.position += len(group)
                    epoch_done = self.position >= len(batches)
                    if epoch_done:
                        self.epoch, self.position = self.epoch + 1, 0
                    reason = self.stop_reason()
                    every = self.cfg.valid_every
                    if (every and self.step % every == 0) or (not every and epoch_done):
                        self.checkpoint()
                        reason = self.stop_reason()
                    if epoch_done:
                        break
        if self.saved_step != self.step:  # not from the files: rank 0 may still be writing
            self.checkpoint()
        self.log.info(f"stopped at step {self.step}: {reason}")
        if self.tensorboard is not None:
            self.tensorboard.close()
        self.session.barrier()
        return self.last_metrics

    def _bar(self):
        if self.cfg.max_minutes:  # the bar counts training seconds, so its ETA means something
            total, done, unit = round(60 * self.cfg.max_minutes), self.elapsed, "s"
        elif self.cfg.max_steps:
            total, done, unit = self.cfg.max_steps, self.step, "step"
        else:
            total, done, unit = self.cfg.max_epochs, self.epoch, "epoch"
        self.bar_unit = unit
        self.window = [0.0, self.elapsed]  # units and training time since the last row
        return progress(total, "training", unit, initial=min(done, total),
                        disable=not self.session.is_main)

    def update(self, group: list, bar) -> None:
        """One optimiser step over this process's share of ``group``."""
        start = time.perf_counter()
        s = self.session
        mine = group[s.rank::s.world]
        weight = 1.0
        if not mine:  # the epoch's last update has fewer batches than processes
            mine, weight = group[:1], 0.0  # take part in the gradient exchange, add nothing
        self.model.train()
        total, units = 0.0, 0
        for i, batch in enumerate(mine):
            sync = s.world == 1 or i == len(mine) - 1
            with contextlib.nullcontext() if sync else self.runner.no_sync():
                with autocast(s.device, s.precision):
                    loss, n = self.runner(batch)
                self.scaler.scale(loss * weight).backward()
            total += float(loss.detach()) * weight
            units += int(n) * int(weight)
        seconds = time.perf_counter() - start
        total, units, seconds = s.all_sum([total, float(units), seconds])
        if not math.isfinite(total):
            self.optimizer.zero_grad(set_to_none=True)
            steps = runs.step_checkpoints(self.run_dir)
            kept = f"; the last good checkpoint is {steps[-1]}" if steps else ""
            raise TrainingDiverged(f"loss became {total} at step {self.step + 1}{kept}; "
                                   "lower lr or raise warmup, then start a new --run-dir")
        self.scaler.unscale_(self.optimizer)
        for p in self.params:  # DDP averaged over processes: make it the mean per unit
            if p.grad is not None:
                p.grad.mul_(s.world / max(units, 1))
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.cfg.clip_norm or math.inf)
        groups = self.optimizer.param_groups
        scheduled = [group["lr"] for group in groups]
        factor = self.cooldown_factor()
        for group in groups:
            group["lr"] *= factor
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.used_lr = groups[0]["lr"]
        for group, rate in zip(groups, scheduled):  # the schedule goes on from its own rate
            group["lr"] = rate
        if self.schedule is not None:
            self.schedule.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        self.elapsed += seconds / s.world  # the same on every process
        self._report(bar, total / max(units, 1), units, seconds / s.world, float(norm))

    def progress(self) -> float:
        """The share spent of the budget that will end the run first (0 to 1)."""
        c, shares = self.cfg, [0.0]
        if c.max_minutes:
            shares.append(self.elapsed / (60 * c.max_minutes))
        if c.max_steps:
            shares.append(self.step / c.max_steps)
        if c.max_epochs:
            done = self.epoch + self.position / max(self.epoch_batches, 1)
            shares.append(done / c.max_epochs)
        return min(max(shares), 1.0)

    def cooldown_factor(self) -> float:
        """What the next update's rate is multiplied by: 1, then falling linearly to 0 over
        the last ``cooldown`` share of the budget."""
        if not self.cfg.cooldown:
            return 1.0
        return min(1.0, (1.0 - self.progress()) / self.cfg.cooldown)

    def _report(self, bar, loss: float, units: float, seconds: float, norm: float) -> None:
        """The bar after every update; a metrics row every ``log_every`` updates."""
        if self.bar_unit == "s":
            bar.update(min(seconds, bar.total - bar.n))
        elif self.bar_unit == "step" or self.position == 0:  # a step, or an epoch ended
            bar.update(1)
        bar.set_postfix(step=self.step, epoch=self.epoch, loss=f"{loss:.3f}",
                        **{f"{self.task.unit}/s": f"{units / seconds:,.0f}"}, **self.shown,
                        refresh=False)
        self.window[0] += units
        if self.step % self.cfg.log_every == 0:
            rate = self.window[0] / max(self.elapsed - self.window[1], 1e-9)
            self.write_metrics({"train_loss": round(loss, 4),
                                f"{self.task.unit}_per_s": round(rate),
                                "lr": self.used_lr,
                                "grad_norm": round(norm, 4)})
            self.window = [0.0, self.elapsed]

    # ------------------------------------------------------------ validation and files
    def checkpoint(self) -> None:
        """Validate (once, on rank 0), then save step_N.pt (and best.pt when the metric
        improved), then prune."""
        metrics = None
        if self.session.is_main:  # validation draws no random number training would see
            cuda = [self.session.device] if self.session.device.type == "cuda" else []
            with torch.random.fork_rng(devices=cuda):
                metrics = self.task.validate(self.model)
        metrics = self.session.broadcast(metrics)
        value = metrics[self.task.metric]
        improved = value > self.best if self.task.higher_is_better else value < self.best
        self.best = value if improved else self.best
        self.bad_validations = 0 if improved else self.bad_validations + 1
        state = self.state()  # every process takes part (RNG states are gathered)
        if self.session.is_main:
            # step_N.pt last: a kill before it resumes from the previous one, which repeats
            # this validation, its metrics row (the killed run's is dropped) and best.pt.
            # The other order would resume past an improvement whose best.pt was lost.
            self.write_metrics(metrics, echo=True)
            if improved:
                runs.save_checkpoint(runs.checkpoint_dir(self.run_dir) / runs.BEST, state)
            runs.save_checkpoint(runs.step_path(self.run_dir, self.step), state)
            runs.prune(self.run_dir, self.cfg.keep_last)
        self.last_metrics, self.saved_step = metrics, self.step
        self.shown = {self.task.metric: f"{value:g}"}

    def write_metrics(self, metrics: dict, echo: bool = False) -> None:
        if not self.session.is_main:
            return
        row = {"step": self.step, "epoch": self.epoch, "elapsed_s": round(self.elapsed, 1),
               **metrics}
        runs.append_metrics(self.run_dir, row)
        if self.tensorboard is None:  # opened on the first row, so a failed start writes none
            from torch.utils.tensorboard import SummaryWriter

            self.tensorboard = SummaryWriter(str(self.run_dir / "tensorboard"),
                                             purge_step=self.step)
        for key, value in metrics.items():
            if isinstance(value, (int, float)):
                self.tensorboard.add_scalar(key, value, self.step)
        self.tensorboard.flush()
        # every row goes to train.log; training rows stay off the terminal (the bar shows them)
        self.log.info(" ".join(f"{k} {v}" for k, v in row.items()),
                      extra={} if echo else {"file_only": True})


def _rng_state(device: torch.device) -> dict:
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def train_task(make_task, config, run_dir: str | Path, extendable: tuple[str, ...]
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
            return _train(make_task, config, run_dir, extendable, session)
    finally:
        distributed.end(session)


def _train(make_task, config, run_dir: Path, extendable, session: Session):
    cfg: EngineConfig = config.engine
    runs.check_config(run_dir, config, extendable)
    if session.is_main:
        log = setup_logging(run_dir, "train")
    else:
        log = logging.getLogger(f"transduce.rank{session.rank}")
        log.addHandler(logging.NullHandler())
        log.propagate = False
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    if session.device.type == "cpu":
        retain_freed_memory()
    task = make_task(session, log)
    engine = Engine(task, cfg, session, run_dir, dataclasses.asdict(config), log)
    if session.is_main:
        runs.write_config(run_dir, config)
        runs.truncate_metrics(run_dir, engine.step)  # rows written after the last checkpoint
    params = sum(p.numel() for p in engine.model.parameters())
    threads, world = torch.get_num_threads(), session.world
    log.info(f"{task.kind}: {params:,} parameters; {session.device}, {session.precision}, "
             f"{threads} thread{'s' * (threads != 1)} × {world} process{'es' * (world != 1)}")
    return engine, engine.run()
