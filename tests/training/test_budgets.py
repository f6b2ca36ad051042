"""The engine's budgets: what ends a run, what the bar counts, what the clock counts."""

import time

import pytest
import torch

from tests.helpers.engine import ToyTask, engine_for
from transduce.training.engine import Engine


def test_cooldown_follows_the_budget_that_ends_the_run_first(tmp_path):
    engine = engine_for(ToyTask([]), tmp_path, max_steps=100, max_minutes=1.0, cooldown=0.5)
    engine.step, engine.elapsed = 10, 45.0  # 10% of the steps, 75% of the minutes
    assert engine.progress() == pytest.approx(0.75)  # what cooldown_factor is given
    engine.elapsed = 15.0
    assert engine.progress() == pytest.approx(0.25)


def test_an_epoch_budget_bar_counts_epochs_once_they_end(tmp_path, monkeypatch):
    batches = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(3)]
    engine = engine_for(ToyTask(batches), tmp_path, max_steps=0, max_epochs=2, valid_every=0)
    seen, original = [], Engine.update
    monkeypatch.setattr(
        Engine, "update", lambda self, *a: (original(self, *a), seen.append(self.report.bar.n))
    )
    engine.run()
    assert seen == [0, 0, 1, 1, 1, 2]  # not 1 while the first epoch is still training


def test_with_two_budgets_the_bar_counts_the_share_of_the_one_that_ends_first(
    tmp_path, monkeypatch
):
    batches = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(2)]
    # a config's hour of training, cut to 4 updates on the command line: the steps end it
    engine = engine_for(ToyTask(batches), tmp_path, max_steps=4, max_minutes=60.0)
    seen, original = [], Engine.update
    monkeypatch.setattr(
        Engine, "update", lambda self, *a: (original(self, *a), seen.append(self.report.bar.n))
    )
    engine.run()
    assert engine.report.bar_unit == "%" and seen == pytest.approx([25, 50, 75, 100])


def test_training_time_counts_each_updates_optimiser_step(tmp_path):
    """max_minutes is training time: an optimiser step is as much of it as the backward
    pass (a text run's AdamW and clipping took a fifth of its updates, uncounted)."""
    pause = 0.05

    class SlowStep(torch.optim.SGD):
        def step(self, closure=None):
            time.sleep(pause)
            return super().step(closure)

    class SlowOptimiser(ToyTask):
        def build_optimizer(self, model):
            return SlowStep(model.parameters(), lr=1.0), None

    batches = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(5)]
    engine = engine_for(SlowOptimiser(batches), tmp_path, max_steps=5, valid_every=0)
    engine.run()
    # the last update's step is counted with the next update's, which there is not
    assert engine.elapsed >= 4 * pause
