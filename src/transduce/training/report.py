"""What a training run shows and records as it goes: the progress bar, and the rows of
``metrics.jsonl``, TensorBoard and ``train.log``. Only the first process draws or writes."""

from __future__ import annotations

from pathlib import Path

from transduce import runs
from transduce.logs import progress
from transduce.training.engine_config import EngineConfig


class Report:
    """The bar and the metric rows of one run. ``unit`` names what the loss is summed over
    ("tokens", "values"); training rows average it over the last ``log_every`` updates."""

    def __init__(self, *, run_dir: Path, cfg: EngineConfig, unit: str, is_main: bool, log) -> None:
        self.run_dir, self.cfg, self.unit = run_dir, cfg, unit
        self.is_main, self.log = is_main, log
        self.tensorboard = None  # opened on the first row, so a failed start writes none
        self.bar = None  # open while training
        self.shown: dict = {}  # the last validation, on the bar
        self.postfix: dict = {}  # the rest of the bar's postfix, from the last update

    def open_bar(self, step: int, epoch: int, elapsed: float, share: float):
        """The bar for the budget that ends the run; a resumed run starts it where it was.
        ``share``: how much of the budget that ends first is spent (the engine's progress)."""
        c = self.cfg
        if sum(1 for budget in (c.max_minutes, c.max_steps, c.max_epochs) if budget) > 1:
            # which ends the run depends on the machine's speed: count the larger share
            total, done, self.bar_unit = 100, 100 * share, "%"
        elif c.max_minutes:  # the bar counts training seconds, so its ETA means something
            total, done, self.bar_unit = round(60 * c.max_minutes), elapsed, "s"
        elif c.max_steps:
            total, done, self.bar_unit = c.max_steps, step, "step"
        else:
            total, done, self.bar_unit = c.max_epochs, epoch, "epoch"
        self.window = [0.0, elapsed]  # units and training time since the last row
        self.bar = progress(
            total, "training", self.bar_unit, initial=min(done, total), disable=not self.is_main
        )
        return self.bar  # the caller closes it

    def update(
        self,
        *,
        step: int,
        epoch: int,
        epoch_done: bool,
        elapsed: float,
        loss: float,
        units: float,
        seconds: float,
        lr: float,
        norm: float,
        share: float,
    ) -> None:
        """The bar after every update; a training row every ``log_every`` updates."""
        bar = self.bar
        self.postfix = {
            "step": step,
            "epoch": epoch,
            "loss": f"{loss:.3f}",
            f"{self.unit}/s": f"{units / seconds:,.0f}",
        }
        self._draw_postfix()  # first, so that the redraw the count brings shows this update
        if self.bar_unit == "%":
            bar.update(max(min(100 * share, 100) - bar.n, 0))
        elif self.bar_unit == "s":
            bar.update(min(seconds, bar.total - bar.n))
        elif self.bar_unit == "step" or epoch_done:
            bar.update(1)
        self.window[0] += units
        if step % self.cfg.log_every == 0:
            rate = self.window[0] / max(elapsed - self.window[1], 1e-9)
            self.row(
                step,
                epoch,
                elapsed,
                {
                    "train_loss": round(loss, 4),
                    f"{self.unit}_per_s": round(rate),
                    "lr": lr,
                    "grad_norm": round(norm, 4),
                },
            )
            self.window = [0.0, elapsed]

    def show(self, metric: str, value: float) -> None:
        """A validation's result, on the bar at once: the last one stays there when the
        run ends with it."""
        self.shown = {metric: f"{value:g}"}
        if self.bar is not None:  # closed bars draw nothing
            self._draw_postfix()

    def _draw_postfix(self) -> None:
        self.bar.set_postfix({**self.postfix, **self.shown}, refresh=False)

    def row(self, step: int, epoch: int, elapsed: float, metrics: dict, echo: bool = False) -> None:
        """One row to metrics.jsonl, TensorBoard and train.log (``echo``: to the terminal
        as well; training rows stay off it, since the bar shows them)."""
        if not self.is_main:
            return
        row = {"step": step, "epoch": epoch, "elapsed_s": round(elapsed, 1), **metrics}
        runs.append_metrics(self.run_dir, row)
        if self.tensorboard is None:
            from torch.utils.tensorboard import SummaryWriter

            self.tensorboard = SummaryWriter(str(self.run_dir / runs.TENSORBOARD), purge_step=step)
        for key, value in metrics.items():
            if isinstance(value, (int, float)):
                self.tensorboard.add_scalar(key, value, step)
        self.tensorboard.flush()
        self.log.info(
            " ".join(f"{k} {v}" for k, v in row.items()), extra={} if echo else {"file_only": True}
        )

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.close()
