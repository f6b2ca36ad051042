"""The one training loop. A task says what to train; the engine owns how.

A :class:`Task` supplies its model, optimiser, batches, summed loss and validation. The
engine owns the update (gradient accumulation, normalisation, clipping, optimiser and
schedule steps), mixed precision, the NaN/inf guard, budgets, validation cadence and early
stopping, checkpoints and exact resume (mid-epoch too), the progress bar, ``metrics.jsonl``
and TensorBoard (through :mod:`transduce.training.report`), and distribution over processes
(``DistributedDataParallel``). :func:`transduce.training.train.train_task` sets a run up.

Every process computes the same list of batches for an epoch (from the seed and the epoch
number; compared across processes as each epoch starts); an update takes the next
``accumulate × world`` of them and rank r trains on every world-th one from r. The summed
loss of all of them is divided by their units (target tokens, forecast values) summed over
all micro-batches and processes, so accumulation and several processes give the gradient of
the merged batch. Positions in the epoch count batches, not updates, so a checkpoint written
by N processes resumes on M.
"""

# size: the one loop and its invariants (update, accumulation, NaN guard, budgets,
# resume, DDP) are read together; each method is short

from __future__ import annotations

import contextlib
import math
import signal
import time
from pathlib import Path
from typing import Any, Protocol, Sequence

import torch
from torch import Tensor, nn

from transduce import runs
from transduce.device import autocast
from transduce.errors import UserError
from transduce.training.distributed import Session, check_same_batches
from transduce.training.engine_config import EngineConfig
from transduce.training.report import Report
from transduce.training.schedule import cooldown_factor, scaled_rate
from transduce.training.signals import Interrupted, StopSignals


class Task(Protocol):
    """What a task gives the engine (translation, forecasting, the demo, ...)."""

    kind: str  # the checkpoint's kind of model (see runs.KINDS)
    metric: str  # the validation metric that picks best.pt
    higher_is_better: bool
    unit: str  # what the loss is summed over: "tokens", "values"

    def build_model(self) -> nn.Module: ...
    def build_optimizer(self, model: nn.Module) -> tuple[torch.optim.Optimizer, Any]: ...
    def batches(self, epoch: int) -> Sequence[Any]: ...  # the same on every process
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

    def __init__(
        self, *, task: Task, cfg: EngineConfig, session: Session, run_dir: Path, config: dict, log
    ) -> None:
        self.task, self.cfg, self.session, self.run_dir = task, cfg, session, Path(run_dir)
        self.config, self.log = config, log
        self.step = self.epoch = self.position = self.bad_validations = 0
        self.best = -math.inf if task.higher_is_better else math.inf
        self.elapsed, self.last_metrics, self.saved_step = 0.0, {}, -1
        # the last update's clipping and optimiser step, in seconds: the next update adds
        # them to its own through the same sum over processes, so every process's clock
        # (and so its budget's end) stays the same
        self.unsummed = 0.0
        self.report = Report(
            run_dir=self.run_dir, cfg=cfg, unit=task.unit, is_main=session.is_main, log=log
        )
        self.epoch_batches, self.used_lr = 1, 0.0  # this epoch's batches; the last update's rate
        self.signals = StopSignals()  # SIGINT or SIGTERM while training: stop and save
        self.stopping = False  # a process was signalled: all stop after the same update
        torch.manual_seed(cfg.seed)  # the same initial weights in every process
        self.model = task.build_model().to(session.device)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer, self.schedule = (
            task.build_optimizer(self.model) if self.params else (None, None)
        )
        self.scaler = torch.amp.GradScaler(session.device.type, enabled=session.precision == "fp16")
        self.runner = _LossModule(self.model, task)
        if session.world > 1 and self.params:
            from torch.nn.parallel import DistributedDataParallel

            ids = [session.device.index] if session.device.type == "cuda" else None
            self.runner = DistributedDataParallel(self.runner, device_ids=ids)
        torch.manual_seed(cfg.seed * 1000 + session.rank)  # dropout differs across processes
        steps = runs.step_checkpoints(self.run_dir)
        if steps:
            before = steps[-2].name if len(steps) > 1 else "the start"
            try:
                state = runs.load_checkpoint(steps[-1], task.kind)
            except runs.DamagedCheckpoint as error:  # say which file to delete
                raise UserError(
                    f"{error.path}: not a transduce checkpoint ({error.reason}): "
                    f"the run's newest checkpoint is damaged; delete it to resume "
                    f"from {before}, or use a new --run-dir"
                ) from None
            try:
                self.restore(state)
            except (KeyError, TypeError, ValueError, RuntimeError) as error:
                raise UserError(
                    f"{steps[-1]}: cannot resume from it ({type(error).__name__}: "
                    f"{str(error).splitlines()[0][:200]}); delete it to resume "
                    "from the one before, or use a new --run-dir"
                ) from None
            log.info(f"resuming from {steps[-1]} (step {self.step}, epoch {self.epoch})")

    # ------------------------------------------------------------ state
    def state(self) -> dict:
        rng = self.session.gather(_rng_state(self.session.device))
        return runs.record(
            self.task.kind,
            self.model,
            config=self.config,
            optimizer=self.optimizer.state_dict() if self.optimizer else {},
            schedule=self.schedule.state_dict() if self.schedule else {},
            grad_scaler=self.scaler.state_dict(),
            rng=rng,
            **self.task.record(),
            **{k: getattr(self, k) for k in self.PROGRESS},
        )

    def restore(self, state: dict) -> None:
        mine = self.task.record()
        if state.get("tokenizer") != mine.get("tokenizer"):
            raise UserError(
                f"{self.run_dir}/checkpoints: written with another tokenizer than "
                "the run's; use a new --run-dir"
            )
        if "data" in state and state["data"] != mine.get("data"):
            raise UserError(
                f"{self.run_dir}: its checkpoints were trained on other data than "
                "this run's settings give (a changed csv?); give the run's own data "
                "or use a new --run-dir"
            )
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
            return (
                f"reached max_minutes={c.max_minutes} of training time (validations "
                "are not counted)"
            )
        if c.patience and self.bad_validations >= c.patience:
            return f"no {self.task.metric} gain in {c.patience} validations (patience)"
        if self.stopping:
            return "interrupted"
        return None

    # ------------------------------------------------------------ the loop
    def unwrap(self) -> None:
        """Drop the DistributedDataParallel wrapper once training ends (``model`` stays, and
        trained). The wrapper holds the process group, and the engine goes back to the
        caller: kept, it would keep the group alive after it is destroyed, to be freed at
        some later point, the interpreter's exit perhaps (the suspected cause of a rare
        SIGABRT at exit, "terminate called without an active exception")."""
        from torch.nn.parallel import DistributedDataParallel

        if isinstance(self.runner, DistributedDataParallel):
            self.runner = self.runner.module

    def run(self) -> dict:
        """Train until a budget is spent; returns the metrics of the last validation."""
        if not self.params:  # nothing to learn (a baseline): validate and save once
            self.checkpoint()
            return self.last_metrics
        reason = self.stop_reason()
        if self.cfg.max_minutes:
            self.log.info(
                f"max_minutes={self.cfg.max_minutes} counts training time only; "
                "validations add to the wall-clock time"
            )
        with (
            self.signals,
            self.report.open_bar(self.step, self.epoch, self.elapsed, self.progress()),
        ):
            while reason is None:
                batches = self.task.batches(self.epoch)
                check_same_batches(self.session, self.epoch, batches)
                if not batches:
                    raise UserError(
                        f"no training batches in epoch {self.epoch + 1}: the "
                        "training data is empty after filtering"
                    )
                per_update = self.cfg.accumulate * self.session.world
                self.epoch_batches = len(batches)
                while self.position < len(batches) and reason is None:
                    group = batches[self.position : self.position + per_update]
                    epoch_done = self.position + len(group) >= len(batches)
                    self.update(group, epoch_done)
                    self.position += len(group)
                    if epoch_done:
                        self.epoch, self.position = self.epoch + 1, 0
                    reason = self.stop_reason()
                    every = self.cfg.valid_every
                    if (every and self.step % every == 0) or (not every and epoch_done):
                        self.checkpoint()
                        reason = self.stop_reason()
                    if epoch_done:
                        break
        interrupted = reason == "interrupted"  # not when a budget ended with that update
        if interrupted:
            self.save_interrupted()
        elif self.saved_step != self.step:  # not from the files: rank 0 may still be writing
            self.checkpoint()
        self.log.info(f"stopped at step {self.step}: {reason}")
        self.report.close()
        self.session.barrier()
        if interrupted:
            raise Interrupted(self.signals.signum or signal.SIGTERM)  # a peer's: as torchrun's
        return self.last_metrics

    def save_interrupted(self) -> None:
        """Save step_N.pt without validating (a validation may take minutes, and one more
        would count towards patience): resuming from it goes on as if never stopped, and the
        validations, metrics rows and best.pt are those of an uninterrupted run."""
        if self.saved_step == self.step:  # the update was a validation's: saved already
            return
        state = self.state()  # every process takes part
        if self.session.is_main:
            self.log.info(f"saved {self._save_step(state)}; run the same command to resume from it")
        self.saved_step = self.step

    def update(self, group: list, epoch_done: bool = False) -> None:
        """One optimiser step over this process's share of ``group`` (``epoch_done``: the
        group ends the epoch, which an epoch budget's bar counts)."""
        start = time.perf_counter()
        s = self.session
        mine = group[s.rank :: s.world]
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
        seconds = time.perf_counter() - start + self.unsummed
        total, units, seconds, signalled = s.all_sum(
            [total, float(units), seconds, float(bool(self.signals.signum))]
        )
        start = time.perf_counter()
        if signalled and not self.stopping:  # the same on every process
            self.stopping = True
            self.log.info(
                f"interrupted at step {self.step + 1}: saving the run after this "
                "update (Ctrl-C again stops at once)"
            )
        if not math.isfinite(total):
            self.optimizer.zero_grad(set_to_none=True)
            steps = runs.step_checkpoints(self.run_dir)
            kept = f"; the last good checkpoint is {steps[-1]}" if steps else ""
            raise TrainingDiverged(
                f"loss became {total} at step {self.step + 1}{kept}; "
                "lower lr or raise warmup, then start a new --run-dir"
            )
        self.scaler.unscale_(self.optimizer)
        for p in self.params:  # DDP averaged over processes: make it the mean per unit
            if p.grad is not None:
                p.grad.mul_(s.world / max(units, 1))
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.cfg.clip_norm or math.inf)
        factor = cooldown_factor(self.progress(), self.cfg.cooldown)
        with scaled_rate(self.optimizer, factor) as self.used_lr:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        if self.schedule is not None:
            self.schedule.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.unsummed = time.perf_counter() - start
        self.step += 1
        self.elapsed += seconds / s.world  # the same on every process
        # epochs completed after this update, as the validation row at this step counts them
        self.report.update(
            step=self.step,
            epoch=self.epoch + epoch_done,
            elapsed=self.elapsed,
            epoch_done=epoch_done,
            loss=total / max(units, 1),
            units=units,
            seconds=seconds / s.world,
            lr=self.used_lr,
            norm=float(norm),
            share=self.progress(),
        )

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
            self.report.row(self.step, self.epoch, self.elapsed, metrics, echo=True)
            if improved:
                runs.save_checkpoint(runs.checkpoint_dir(self.run_dir) / runs.BEST, state)
            self._save_step(state)
        self.last_metrics, self.saved_step = metrics, self.step
        self.report.show(self.task.metric, value)

    def _save_step(self, state: dict) -> Path:
        """Write step_N.pt, then drop the step checkpoints beyond ``keep_last``."""
        path = runs.step_path(self.run_dir, self.step)
        runs.save_checkpoint(path, state)
        runs.prune(self.run_dir, self.cfg.keep_last)
        return path


def _rng_state(device: torch.device) -> dict:
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict, device: torch.device) -> None:
    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)
