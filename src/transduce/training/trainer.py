"""`transduce train`: the training loop of a translation model, resumable at any point.

A run directory holds config.yaml, spm.model, checkpoints/ (step_N.pt, best.pt), train.log,
metrics.jsonl and tensorboard/. Each checkpoint holds everything the loop needs to continue
exactly (weights, optimiser, schedule, RNG state, the position in the epoch), so a run killed
at any moment and started again on CPU ends with the same weights as one never stopped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from pathlib import Path

import torch
from torch import Tensor
import yaml

from transduce.data.batching import collate, count_tokens, token_batches
from transduce.device import autocast, pick_device, resolve_precision
from transduce.errors import UserError
from transduce.io import write_text
from transduce.logs import progress, setup_logging
from transduce.nn import build_transformer, padding_mask
from transduce.training.checkpoint import load_checkpoint, prune, save_checkpoint, step_checkpoints
from transduce.training.config import EXTENDABLE, TrainConfig
from transduce.training.data import RunData, load_run_data, read_corpora
from transduce.training.loss import linear_label_smoothed_ce
from transduce.training.schedule import paper_adam, schedule_for
from transduce.training.validate import validate


class TrainingDiverged(UserError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


def prepare_run_dir(cfg, run_dir: Path, extendable: tuple[str, ...] = EXTENDABLE) -> None:
    """Write the resolved config (a dataclass), or check that a resumed run keeps it, except
    for the ``extendable`` keys."""
    path = run_dir / "config.yaml"
    if path.exists():
        old = yaml.safe_load(path.read_text(encoding="utf-8"))
        new = dataclasses.asdict(cfg)
        changed = [k for k in new if k not in extendable and old.get(k) != new[k]]
        if changed:
            k = changed[0]
            raise UserError(f"{path}: this run was started with {k}={old.get(k)!r}, not "
                            f"{new[k]!r}; resume with the same settings or use a new --run-dir")
    write_text(path, yaml.safe_dump(dataclasses.asdict(cfg), sort_keys=False))


def train(cfg: TrainConfig, run_dir: str | Path) -> dict:
    """Train (or resume) a run; returns the metrics of its last validation."""
    run_dir = Path(run_dir)
    corpora = read_corpora(cfg)  # bad input fails here, before anything is written
    run_dir.mkdir(parents=True, exist_ok=True)
    prepare_run_dir(cfg, run_dir)
    log = setup_logging(run_dir, "train")
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    data = load_run_data(cfg, corpora, run_dir, log)
    device = pick_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    torch.manual_seed(cfg.seed)
    model_config = cfg.model_config(len(data.tokenizer))
    model = build_transformer(model_config).to(device)
    optimizer = paper_adam(model.parameters())
    schedule = schedule_for(optimizer, cfg.schedule, cfg.d_model, cfg.warmup, cfg.lr)
    loop = Loop(cfg, run_dir, data, model, dataclasses.asdict(model_config), optimizer,
                schedule, device, precision, log)
    steps = step_checkpoints(run_dir / "checkpoints")
    if steps:
        loop.restore(load_checkpoint(steps[-1]))
        log.info(f"resuming from {steps[-1]} (step {loop.step})")
    log.info(f"{sum(p.numel() for p in model.parameters()):,} parameters; {device.type}, "
             f"{precision}, {torch.get_num_threads()} threads; "
             f"{len(data.train_src):,} training pairs")
    return loop.run()


def summed_loss(model, src: Tensor, tgt: Tensor, pad_id: int, epsilon: float) -> Tensor:
    """The label-smoothed loss summed over a batch's target tokens (teacher forcing).

    Args: src (B, S) ids + EOS; tgt (B, T + 2) BOS … EOS, padded with ``pad_id``.
    The output layer and the loss see non-padding positions only.
    """
    gold = tgt[:, 1:]
    keep = gold != pad_id
    hidden = model.features(src, tgt[:, :-1], padding_mask(src, pad_id))  # (B, T + 1, D)
    return linear_label_smoothed_ce(hidden[keep], model.generator.weight, gold[keep], epsilon)


class Loop:
    """The state of a run between updates, and the updates themselves."""

    # Where the run is, besides weights, optimiser, schedule and RNG: saved and restored.
    PROGRESS = ("step", "epoch", "batch_in_epoch", "best_bleu", "bad_validations", "elapsed")

    def __init__(self, cfg, run_dir, data: RunData, model, model_config: dict, optimizer,
                 schedule, device, precision, log) -> None:
        self.cfg, self.run_dir, self.data, self.log = cfg, run_dir, data, log
        self.model, self.model_config = model, model_config
        self.optimizer, self.schedule = optimizer, schedule
        self.device, self.precision = device, precision
        self.step = self.epoch = self.batch_in_epoch = self.bad_validations = 0
        self.best_bleu, self.elapsed, self.last_metrics = -1.0, 0.0, {}
        self.tensorboard = None  # opened on the first metrics, so a failed start writes none
        self.by_time = False

    def state(self) -> dict:
        return {"model": self.model.state_dict(), "model_config": self.model_config,
                "optimizer": self.optimizer.state_dict(), "schedule": self.schedule.state_dict(),
                "rng": torch.get_rng_state(), "tokenizer": self.data.tokenizer.fingerprint,
                "config": dataclasses.asdict(self.cfg),
                **{k: getattr(self, k) for k in self.PROGRESS}}

    def restore(self, state: dict) -> None:
        if state.get("tokenizer") != self.data.tokenizer.fingerprint:
            raise UserError(f"{self.run_dir}/checkpoints: written with another spm.model; "
                            "use a new --run-dir")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        for key in self.PROGRESS:
            setattr(self, key, state[key])

    def epoch_batches(self) -> list[list[int]]:
        """This epoch's batches: the same for a given seed and epoch, so a resumed run
        can skip exactly the ones it had done."""
        src, tgt = self.data.train_src, self.data.train_tgt
        lengths = [max(len(s), len(t)) + 2 for s, t in zip(src, tgt)]
        return token_batches(lengths, self.cfg.max_tokens,
                             random.Random(self.cfg.seed * 100_003 + self.epoch))

    def stop_reason(self) -> str | None:
        c = self.cfg
        if self.step >= c.max_steps:
            return f"reached max_steps={c.max_steps}"
        if c.max_epochs and self.epoch >= c.max_epochs:
            return f"reached max_epochs={c.max_epochs}"
        if c.max_minutes and self.elapsed >= 60 * c.max_minutes:
            return f"reached max_minutes={c.max_minutes}"
        if c.patience and self.bad_validations >= c.patience:
            return f"no BLEU gain in {c.patience} validations (patience)"
        return None

    def run(self) -> dict:
        # With a time budget the bar counts training seconds, so its ETA means something.
        self.by_time = bool(self.cfg.max_minutes)
        total, unit = ((round(60 * self.cfg.max_minutes), "s") if self.by_time
                       else (self.cfg.max_steps, "step"))
        done = min(self.elapsed, total) if self.by_time else self.step  # when resuming
        with progress(total, "training", unit, initial=done) as bar:
            while (reason := self.stop_reason()) is None:
                batches = self.epoch_batches()
                while self.batch_in_epoch < len(batches) and self.stop_reason() is None:
                    start = self.batch_in_epoch
                    group = batches[start: start + self.cfg.accumulate]
                    self.update(group, bar)
                    self.batch_in_epoch += len(group)
                    if self.step % self.cfg.valid_every == 0:
                        self.checkpoint()
                if self.batch_in_epoch >= len(batches):
                    self.epoch, self.batch_in_epoch = self.epoch + 1, 0
        if not (self.run_dir / "checkpoints" / f"step_{self.step}.pt").exists():
            self.checkpoint()
        self.log.info(f"stopped at step {self.step}: {reason}")
        if self.tensorboard is not None:
            self.tensorboard.close()
        return self.last_metrics

    def update(self, group: list[list[int]], bar) -> None:
        """One optimiser step over ``group`` (accumulated batches), normalised by the number
        of target tokens in all of them."""
        start = time.perf_counter()
        tok = self.data.tokenizer
        batches = [collate([self.data.train_src[i] for i in b],
                           [self.data.train_tgt[i] for i in b], tok.pad_id, tok.bos_id,
                           tok.eos_id) for b in group]
        tokens = sum(count_tokens(tgt[:, 1:], tok.pad_id) for _, tgt in batches)
        self.model.train()
        total = 0.0
        for src, tgt in batches:
            src, tgt = src.to(self.device), tgt.to(self.device)
            with autocast(self.device, self.precision):
                loss = summed_loss(self.model, src, tgt, tok.pad_id, self.cfg.label_smoothing)
            loss = loss / tokens
            loss.backward()
            total += loss.item()
        if not math.isfinite(total):
            self.optimizer.zero_grad(set_to_none=True)
            steps = step_checkpoints(self.run_dir / "checkpoints")
            kept = f"; the last good checkpoint is {steps[-1]}" if steps else ""
            raise TrainingDiverged(f"loss became {total} at step {self.step + 1}{kept}; "
                                   "lower lr or raise warmup, then start a new --run-dir")
        if self.cfg.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip_norm)
        self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        seconds = time.perf_counter() - start
        self.elapsed += seconds
        bar.update(min(seconds, bar.total - bar.n) if self.by_time else 1)
        bar.set_postfix(step=self.step, epoch=self.epoch, loss=f"{total:.3f}",
                        tok_s=f"{tokens / seconds:,.0f}", refresh=False)
        if self.step % 100 == 0:
            self.write_metrics({"train_loss": round(total, 4),
                                "tokens_per_s": round(tokens / seconds),
                                "lr": self.schedule.get_last_lr()[0]})

    def checkpoint(self) -> None:
        """Validate, then save step_N.pt (and best.pt when BLEU improved), then prune."""
        metrics = validate(self.model, self.data, self.device, self.precision)
        improved = metrics["valid_bleu"] > self.best_bleu
        self.best_bleu = max(self.best_bleu, metrics["valid_bleu"])
        self.bad_validations = 0 if improved else self.bad_validations + 1
        directory = self.run_dir / "checkpoints"
        state = self.state()
        save_checkpoint(directory / f"step_{self.step}.pt", state)
        if improved:
            save_checkpoint(directory / "best.pt", state)
        prune(directory, self.cfg.keep_last)
        self.last_metrics = metrics
        self.write_metrics(metrics, echo=True)

    def write_metrics(self, metrics: dict, echo: bool = False) -> None:
        record = {"step": self.step, "epoch": self.epoch,
                  "elapsed_s": round(self.elapsed, 1), **metrics}
        with open(self.run_dir / "metrics.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        if self.tensorboard is None:
            from torch.utils.tensorboard import SummaryWriter

            self.tensorboard = SummaryWriter(str(self.run_dir / "tensorboard"))
        for key, value in metrics.items():
            self.tensorboard.add_scalar(key, value, self.step)
        self.tensorboard.flush()
        if echo:
            self.log.info(" ".join(f"{k} {v}" for k, v in record.items()))
