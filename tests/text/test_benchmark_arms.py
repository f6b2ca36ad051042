"""The text benchmark's pre-trained arms: a tagger's start is the arm's own encoder (its
sizes, letters and hidden subwords) trained on EWT's tags, and the fine-tuning run starts
from it; the paths it records are the machine's own only when it runs."""

import dataclasses
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers.docs import ROOT
from transduce.config import apply_overrides
from transduce.tasks.text.config import TextConfig


def text_harness():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from gen_pages import harness
    finally:
        sys.path.remove(str(ROOT / "docs"))
    return harness("text/run.py")


def test_a_tagger_start_is_the_arms_encoder_trained_on_ewt_tags(tmp_path):
    bench = text_harness()
    args = SimpleNamespace(data=Path("/data"), runs=tmp_path)
    arms = [("trec", "max_chars_xpos", 5), ("wnut", "chars_recall_upos", 4)]
    arms.append(("upos", "last_subword_chars_relative_16k_regularised_xpos", 5))
    for task, arm, column in arms:
        *_, settings, shared, candidates = bench.TASKS[task]
        extra = candidates[arm]
        own = [s for s in extra if s not in bench.PRETRAINING]
        start = bench.pretraining(args, task, extra[-1], own)
        assert "train=DATA/ud_ewt/en_ewt-ud-train.conllu" in start
        tagger = apply_overrides(TextConfig(), start)
        arm_cfg = apply_overrides(TextConfig(), [*settings, *shared, *own])
        assert (tagger.task, tagger.format, tagger.column) == ("tag", "conllu", column)
        sizes = dataclasses.replace(tagger.model, dropout=arm_cfg.model.dropout)  # its own
        assert sizes == arm_cfg.model and tagger.chars == arm_cfg.chars > 0
        assert tagger.token_dropout == arm_cfg.token_dropout and tagger.members == 1
        assert tagger.vocab_size == arm_cfg.vocab_size  # the arm's subwords are the start's
        assert tagger.relative == arm_cfg.relative
        assert tagger.outside_weight == 1.0  # the entity loss is the arm's, not the start's
    run = bench.resolved(args, ["train=DATA/x.conllu", "init=RUNS/pre", "chars=64"])
    assert run == [f"train={Path('/data').resolve()}/x.conllu", f"init={tmp_path}/pre", "chars=64"]


def test_an_arm_may_have_minutes_of_its_own(tmp_path, monkeypatch):
    bench = text_harness()
    assert bench.budgets(["pooling=max"], 10.0, "") == (10.0,)
    assert bench.budgets(["xpos"], 10.0, "xpos") == (5.0, 5.0)
    assert bench.budgets(["xpos", "minutes=10+5"], 10.0, "xpos") == (10.0, 5.0)
    assert bench.budgets(["minutes=15"], 10.0, "") == (15.0,)
    for extra, kind in ((["minutes=15"], "xpos"), (["minutes=10+5"], "")):
        with pytest.raises(SystemExit, match="PRE\\+FINE"):
            bench.budgets(extra, 10.0, kind)
    runs = {}
    monkeypatch.setattr(bench, "train", lambda argv, run: runs.setdefault(run.name, argv))
    monkeypatch.setattr(bench, "curve", lambda run, key: [80.0, 81.0])
    args = SimpleNamespace(data=Path("/data"), runs=tmp_path)
    row = bench.candidate(args, "trec", "arm", ["minutes=10+5", "xpos"])
    start, tuned = runs["trec_arm_pretrain"], runs["trec_arm"]
    assert [s for s in start if s.startswith("max_minutes=")] == ["max_minutes=10.0"]
    assert [s for s in tuned if s.startswith("max_minutes=")] == ["max_minutes=5.0"]
    assert not any(s.startswith("minutes=") for s in start + tuned)  # a marker, no setting
    assert row["budget_minutes"] == [10.0, 5.0] and row["validation"] == 81.0
    bench.candidate(args, "trec", "alone", ["threads=2", "xpos"])  # both halves on 2 threads
    for run in ("trec_alone_pretrain", "trec_alone"):
        assert [s for s in runs[run] if s.startswith("threads=")][-1] == "threads=2"


def test_a_pre_marked_setting_reaches_the_pre_training_alone_and_wins_there(tmp_path, monkeypatch):
    bench = text_harness()
    runs = {}
    monkeypatch.setattr(bench, "train", lambda argv, run: runs.setdefault(run.name, argv))
    monkeypatch.setattr(bench, "curve", lambda run, key: [80.0])
    args = SimpleNamespace(data=Path("/data"), runs=tmp_path)
    arm = ["xpos", "pre:batch_tokens=896", "pre:max_epochs=40"]
    bench.candidate(args, "trec", "arm", arm)
    start, tuned = (
        apply_overrides(TextConfig(), runs[r]) for r in ("trec_arm_pretrain", "trec_arm")
    )
    assert (start.batch_tokens, start.engine.max_epochs) == (896, 40)  # after COMMON's 20
    assert (tuned.batch_tokens, tuned.engine.max_epochs) == (0, 20)
    assert not any(s.startswith("pre:") for r in runs.values() for s in r)
    bench.candidate(args, "upos", "both", ["xpos", "batch_tokens=768"])  # a shaping setting
    for run in ("upos_both_pretrain", "upos_both"):
        assert apply_overrides(TextConfig(), runs[run]).batch_tokens == 768


def test_an_averaged_arm_is_validated_as_the_mean_of_its_last_checkpoints(tmp_path, monkeypatch):
    bench = text_harness()
    runs, averaged, scored = {}, [], []

    class Scored:  # stands in for the averaged run's TextModel
        def __init__(self, run):
            self.run = run

        def score(self, path):
            scored.append((self.run.name, path))
            return {"accuracy": 82.5}

    monkeypatch.setattr(bench, "train", lambda argv, run: runs.setdefault(run.name, argv))
    monkeypatch.setattr(bench, "curve", lambda run, key: [80.0, 81.0])
    monkeypatch.setattr(bench, "average_run", lambda run, last: averaged.append((run.name, last)))
    monkeypatch.setattr(bench, "TextModel", Scored)
    args = SimpleNamespace(data=Path("/data"), runs=tmp_path)
    row = bench.candidate(args, "upos", "arm", ["xpos", "average=4"])
    assert averaged == [("upos_arm", 4)]
    assert scored == [("upos_arm", Path("/data/ud_ewt/en_ewt-ud-dev.conllu"))]
    assert row["validation"] == 82.5 and row["validation_best_checkpoint"] == 81.0
    assert row["averaged"] == 4
    assert not any(s.startswith("average=") for run in runs.values() for s in run)  # a marker
    plain = bench.candidate(args, "upos", "plain", ["xpos"])
    assert plain["validation"] == 81.0 and "averaged" not in plain and len(averaged) == 1


def test_the_choice_is_among_the_candidates_that_fit_the_tasks_minutes():
    bench = text_harness()
    rows = {
        "fast": {"validation": 90.0, "minutes": 29.9, "test": 91.0},
        "slow": {"validation": 95.0, "minutes": 30.1, "test": 96.0},
        "tied": {"validation": 90.0, "minutes": 12.0, "test": 89.0},
    }
    assert bench.choose(rows, 30.0) == "fast"  # the slow one's higher score does not count
    assert bench.choose(rows, 31.0) == "slow"
    assert bench.choose({"slow": rows["slow"]}, 10.0) == "slow"  # none fits: among all
    entry = bench.record("upos", rows, commit="abc")
    assert entry["chosen"] == "fast" and entry["test"] == 91.0 and entry["limit_minutes"] == 30
    assert entry["reached"] is False and entry["commit"] == "abc"
