"""Text runs with relative positions (relative=): a tagger that trains, loads and explains
with them, a fine-tuning run that keeps a pre-trained run's scores, and a bad window."""

import dataclasses

import pytest
import torch

import transduce
from tests.helpers.text import (
    TEXT_SETTINGS,
    labelled_sentences,
    plain_sentences,
    tagged_sentences,
    train_text,
)
from transduce.cli.main import main
from transduce.errors import UserError


def test_a_tagger_with_relative_positions_trains_loads_tags_and_explains(tmp_path):
    train_file = tagged_sentences(tmp_path / "train.conll", 200, 1)
    test = tagged_sentences(tmp_path / "test.conll", 30, 2)
    run = train_text(
        tmp_path,
        "run",
        "task=tag",
        "format=conll",
        f"train={train_file}",
        f"test={test}",
        "relative=3",
    )
    assert main(["text", "test", str(run)]) == 0
    model = transduce.load(run)
    assert model.model.relative.scores.shape == (2, 7)  # heads, distances −3 … 3
    assert model.model.relative.scores.abs().sum() > 0  # learned, not left at zero
    assert [w for w, _ in model.tag("big Fox red")] == ["big", "Fox", "red"]
    seen = model.attention("big Fox red")
    for row in seen["weights"][0]:  # the first head, a row a word: each sums to 1
        assert abs(sum(row) - 1) < 1e-4


def test_fine_tuning_keeps_the_pretrained_scores_and_a_run_without_them_starts_afresh(tmp_path):
    text = plain_sentences(tmp_path / "text.txt", 200, 5)
    pre = train_text(tmp_path, "pre", "task=mlm", "format=lines", f"train={text}", "relative=3")
    train_file = labelled_sentences(tmp_path / "train.tsv", 100, 1)
    from transduce.tasks.text.task import build_text_model, load_init

    learned = torch.load(pre / "checkpoints" / "best.pt", map_location="cpu", weights_only=True)[
        "model"
    ]
    tuned = transduce.load(
        train_text(tmp_path, "tuned", f"train={train_file}", f"init={pre}", "relative=3")
    )
    fresh = build_text_model(tuned.cfg, len(tuned.tokenizer), 2)
    assert torch.equal(load_init(fresh, str(pre)).relative.scores, learned["relative.scores"])
    without = build_text_model(dataclasses.replace(tuned.cfg, relative=0), len(tuned.tokenizer), 2)
    with pytest.raises(UserError, match=r"the pre-trained run has relative; give relative=3$"):
        load_init(without, str(pre))
    plain = train_text(tmp_path, "plain", "task=mlm", "format=lines", f"train={text}")
    added = transduce.load(
        train_text(tmp_path, "added", f"train={train_file}", f"init={plain}", "relative=3")
    )
    assert added.model.relative is not None


def test_a_negative_window_is_a_one_line_error(tmp_path, capsys):
    train_file = labelled_sentences(tmp_path / "t.tsv", 20, 1)
    argv = ["text", "train", f"train={train_file}", "relative=-1", *TEXT_SETTINGS]
    assert main([*argv, "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "relative must be at least 0" in err and len(err.splitlines()) == 1
