"""The engine: one update, one loop, for every task."""

import json
import os
import re
import signal
from pathlib import Path

import pytest
import torch
from torch import nn

from tests.helpers.engine import ToyTask, engine_for
from tests.helpers.forecasting import SINE_YAML as FORECAST_TINY
from tests.helpers.forecasting import write_sine
from transduce.cli.main import main
from transduce.errors import UserError
from transduce.runs import load_checkpoint, step_checkpoints
from transduce.training import train as train_module
from transduce.training.distributed import check_same_batches
from transduce.training.engine import Engine, EngineConfig
from transduce.training.signals import Interrupted

SRC = Path(__file__).parents[2] / "src" / "transduce"


def test_accumulation_gives_the_gradient_of_the_merged_batch(tmp_path):
    a = (torch.randn(2, 3), torch.randn(2, 1))
    b = (torch.randn(5, 3), torch.randn(5, 1))  # of another size: per-batch means would differ
    engine = engine_for(ToyTask([a, b]), tmp_path, accumulate=2)
    start = engine.model.weight.detach().clone()
    merged = nn.Linear(3, 1, bias=False)
    merged.weight.data.copy_(start)
    x, y = torch.cat([a[0], b[0]]), torch.cat([a[1], b[1]])
    (((merged(x) - y) ** 2).sum() / 7).backward()  # normalised by the units of both
    engine.run()
    assert engine.step == 1 and engine.position == 0 and engine.epoch == 1
    torch.testing.assert_close(engine.model.weight.detach(), start - merged.weight.grad)


class ConstantGradient(ToyTask):
    """loss = w · x: every update moves the weight by −rate · x, whatever the weight."""

    def loss(self, model, batch):
        return model(batch).sum(), 1


def test_cooldown_lowers_the_rate_linearly_to_zero_over_the_end_of_the_budget(tmp_path):
    x = torch.tensor([[1.0, 2.0, 3.0]])
    engine = engine_for(ConstantGradient([x]), tmp_path, max_steps=4, cooldown=0.5, log_every=1)
    start = engine.model.weight.detach().clone()
    engine.run()
    # Progress before updates 1..4 is 0, 1/4, 1/2, 3/4: factors 1, 1, 1, 1/2.
    torch.testing.assert_close(engine.model.weight.detach(), start - 3.5 * x)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [r["lr"] for r in rows if "lr" in r] == [1.0, 1.0, 1.0, 0.5]  # the rates used
    assert engine.optimizer.param_groups[0]["lr"] == 1.0  # the schedule's own, not scaled


class SignalledAt(ToyTask):
    """Ctrl-C lands inside the ``at``-th update (one batch per update)."""

    def __init__(self, batches, at):
        super().__init__(batches)
        self.at, self.calls = at, 0

    def loss(self, model, batch):
        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), signal.SIGINT)
        return super().loss(model, batch)


def test_ctrl_c_in_the_last_update_ends_the_run_as_its_budget_would(tmp_path):
    batches = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(3)]
    engine = engine_for(SignalledAt(batches, 4), tmp_path, max_steps=4, valid_every=3)
    try:  # caught: pytest would take a KeyboardInterrupt for the user's and stop
        engine.run()
    except Interrupted:
        pytest.fail("the run was over, yet it stopped as interrupted, its validation skipped")
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [r["step"] for r in rows if "score" in r] == [3, 4]


def test_ctrl_c_saves_the_run_after_the_update_and_it_resumes_as_if_never_stopped(tmp_path):
    torch.manual_seed(0)
    batches = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(3)]
    settings = {"max_steps": 7, "valid_every": 3}
    whole = engine_for(ToyTask(batches), tmp_path / "whole", **settings)
    whole.run()

    def let_through(signum, frame):  # what runs if the engine takes no signals
        raise RuntimeError("the signal reached the handler the engine should have replaced")

    stopped = engine_for(SignalledAt(batches, 4), tmp_path / "stopped", **settings)
    previous = signal.signal(signal.SIGINT, let_through)
    try:
        before = {kind: signal.getsignal(kind) for kind in (signal.SIGINT, signal.SIGTERM)}
        with pytest.raises(Interrupted) as caught:
            stopped.run()
        after = {kind: signal.getsignal(kind) for kind in before}
    finally:
        signal.signal(signal.SIGINT, previous)
    assert caught.value.signum == signal.SIGINT and stopped.step == 4  # the update finished
    assert after == before  # the handlers are given back
    run = tmp_path / "stopped" / "run"
    assert [p.name for p in step_checkpoints(run)] == ["step_3.pt", "step_4.pt"]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    assert [r["step"] for r in rows if "score" in r] == [3]  # no validation for the stop

    engine_for(ToyTask(batches), tmp_path / "stopped", **settings).run()  # resumes at 4
    final, expected = (
        load_checkpoint(r / "run" / "checkpoints" / "step_7.pt")
        for r in (tmp_path / "stopped", tmp_path / "whole")
    )
    torch.testing.assert_close(
        final["model"]["weight"], expected["model"]["weight"], rtol=0, atol=0
    )
    rows = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    assert [r["step"] for r in rows if "score" in r] == [3, 6, 7]  # as the whole run's


class Scores(ToyTask):
    """Validation scores 1, 2, 3, ... in turn."""

    def validate(self, model):
        self.validations = getattr(self, "validations", 0) + 1
        return {"score": float(self.validations)}


def test_rows_and_bar_count_completed_epochs_and_the_bar_ends_on_the_last_validation(tmp_path):
    batches = [(torch.randn(2, 3), torch.randn(2, 1)) for _ in range(3)]
    engine = engine_for(
        Scores(batches), tmp_path, max_steps=0, max_epochs=2, valid_every=0, log_every=3
    )
    engine.run()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    # a training row and the validation row at the end of an epoch name the same epoch
    assert [(r["step"], r["epoch"], "score" in r) for r in rows] == [
        (3, 1, False),
        (3, 1, True),
        (6, 2, False),
        (6, 2, True),
    ]
    postfix = engine.report.bar.postfix
    assert "epoch=2" in postfix and "score=2" in postfix, postfix


@pytest.mark.parametrize("value", [-0.1, 1.5])
def test_cooldown_outside_zero_to_one_is_refused(value):
    assert [key for key, _ in EngineConfig(max_steps=1, cooldown=value).problems()] == ["cooldown"]


def test_a_run_without_batches_stops_at_once_with_one_line(tmp_path):
    with pytest.raises(UserError, match="no training batches in epoch 1"):
        engine_for(ToyTask([]), tmp_path).run()


class TwoProcesses:
    """Rank 0 of two processes; the other sends ``theirs`` (by default what rank 0 sends)."""

    world = 2

    def __init__(self, theirs=None):
        self.theirs, self.sent = theirs, None

    def gather(self, obj):
        self.sent = obj
        return [obj, obj if self.theirs is None else self.theirs]


def test_processes_that_computed_different_batches_stop_at_once():
    ours = [torch.tensor([3, 0]), torch.tensor([2, 1])]
    other = TwoProcesses()
    check_same_batches(other, 0, [torch.tensor([3, 0]), torch.tensor([1, 2])])
    check_same_batches(
        TwoProcesses(theirs=other.sent), 0, [torch.tensor([3, 0]), torch.tensor([1, 2])]
    )  # the same: carries on
    with pytest.raises(RuntimeError, match="2 processes computed different batches for epoch 3"):
        check_same_batches(TwoProcesses(theirs=other.sent), 2, ours)


def test_only_the_engine_steps_an_optimiser():
    """Every task trains through the engine. The one other loop is training/toy.py, with
    which the study figures (tasks/figures.py) fit their toy models (a kernel width, a
    sequence reverser) in a few hundred plain steps: nothing to checkpoint, resume, budget
    or distribute."""
    steppers = sorted(
        p.relative_to(SRC).as_posix()
        for p in SRC.rglob("*.py")
        if re.search(r"(optimi[sz]er|scaler)\.step\(", p.read_text(encoding="utf-8"))
    )
    assert steppers == ["training/engine.py", "training/toy.py"]


def test_every_task_trains_through_the_engine(config, tmp_path, monkeypatch):
    """Translation, forecasting and the demo: each update is the engine's."""
    updates = []
    original = Engine.update
    monkeypatch.setattr(
        Engine, "update", lambda self, *a: (updates.append(self.task.kind), original(self, *a))
    )
    assert main(["train", str(config), "max_steps=2", "--run-dir", str(tmp_path / "t")]) == 0
    csv = write_sine(tmp_path / "sine.csv")
    forecast = tmp_path / "forecast.yaml"
    forecast.write_text(FORECAST_TINY.format(csv=csv), encoding="utf-8")
    assert (
        main(["forecast", "train", str(forecast), "max_steps=3", "--run-dir", str(tmp_path / "f")])
        == 0
    )
    assert (
        main(
            [
                "demo",
                "max_steps=2",
                "held_out=5",
                "valid_numbers=5",
                "batch_size=8",
                "--out",
                str(tmp_path / "d"),
            ]
        )
        == 0
    )
    assert updates == ["translation"] * 2 + ["forecast"] * 3 + ["numbers"] * 2


def test_a_resumed_run_repeats_no_metrics_and_logs_every_curve(config, tmp_path):
    run = tmp_path / "run"
    assert main(["train", str(config), "max_steps=6", "log_every=1", "--run-dir", str(run)]) == 0
    with open(run / "metrics.jsonl", "a", encoding="utf-8") as f:  # a run that died after
        for step in (7, 8):  # its last checkpoint
            f.write(json.dumps({"step": step, "train_loss": 1.0}) + "\n")
    assert main(["train", "--run-dir", str(run), "max_steps=12"]) == 0
    rows = [json.loads(line) for line in (run / "metrics.jsonl").open(encoding="utf-8")]
    assert [r["step"] for r in rows if "train_loss" in r] == list(range(1, 13))
    assert [r["step"] for r in rows if "valid_bleu" in r] == [4, 6, 8, 12]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run / "tensorboard")).Reload()
    assert {"train_loss", "lr", "tokens_per_s", "grad_norm", "valid_bleu"} <= set(
        events.Tags()["scalars"]
    )


@pytest.fixture
def forecast_config(tmp_path):
    csv = write_sine(tmp_path / "sine.csv")
    path = tmp_path / "tiny.yaml"
    path.write_text(
        FORECAST_TINY.format(csv=csv) + "dropout: 0.1\nmodel: transformer\n", encoding="utf-8"
    )
    return path


def test_forecasting_resumes_exactly_from_the_middle_of_an_epoch(forecast_config, tmp_path):
    def train(run, *settings):
        return main(
            [
                "forecast",
                "train",
                str(forecast_config),
                "max_epochs=2",
                *settings,
                "--run-dir",
                str(tmp_path / run),
            ]
        )

    assert train("whole") == 0
    assert train("split", "max_steps=5") == 0
    middle = load_checkpoint(step_checkpoints(tmp_path / "split")[-1])
    assert (middle["step"], middle["epoch"], middle["position"]) == (5, 0, 5)
    assert train("split", "max_steps=0") == 0
    a = load_checkpoint(step_checkpoints(tmp_path / "whole")[-1])
    b = load_checkpoint(step_checkpoints(tmp_path / "split")[-1])
    assert a["step"] == b["step"] and a["epoch"] == b["epoch"] == 2
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key


def test_forecasting_checks_its_time_budget_after_every_update(forecast_config, tmp_path):
    run = tmp_path / "run"
    assert (
        main(
            [
                "forecast",
                "train",
                str(forecast_config),
                "max_minutes=0.00001",
                "--run-dir",
                str(run),
            ]
        )
        == 0
    )
    last = load_checkpoint(step_checkpoints(run)[-1])
    assert (last["step"], last["epoch"]) == (1, 0)
    assert "reached max_minutes" in (run / "train.log").read_text(encoding="utf-8")


def test_training_on_a_cpu_retains_freed_memory(forecast_config, tmp_path, monkeypatch):
    """The engine asks glibc to keep freed tensors' memory (5–9% faster updates here)."""
    calls = []
    monkeypatch.setattr(train_module, "retain_freed_memory", lambda: calls.append(1) or True)
    # device=cpu: on a machine with a GPU, device=auto trains there and glibc is not asked
    assert (
        main(
            [
                "forecast",
                "train",
                str(forecast_config),
                "max_steps=1",
                "device=cpu",
                "--run-dir",
                str(tmp_path / "run"),
            ]
        )
        == 0
    )
    assert calls == [1]
