"""`transduce text`: a classifier, a tagger and an entity tagger trained, tested, loaded,
predicting and served; bad files and settings refused in one line."""

import json

import pytest

import transduce
from tests.helpers.text import TEXT_SETTINGS, labelled_sentences, tagged_sentences
from transduce.cli.main import main
from transduce.errors import UserError

TINY = TEXT_SETTINGS


def sentences(path, n, seed):
    return labelled_sentences(path, n, seed)


def tagged(path, n, seed):
    return tagged_sentences(path, n, seed)


def train(tmp_path, name, *settings):
    run = tmp_path / name
    assert main(["text", "train", *settings, *TINY, "--run-dir", str(run)]) == 0
    return run


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    train_file = sentences(root / "train.tsv", 400, 1)
    test_file = sentences(root / "test.tsv", 100, 2)
    return train(root, "run", f"train={train_file}", f"test={test_file}", "pooling=mean")


def test_a_classifier_trains_tests_loads_and_predicts(classifier, capsys):
    capsys.readouterr()
    assert main(["text", "test", str(classifier)]) == 0
    assert "test accuracy" in capsys.readouterr().out
    result = json.loads((classifier / "test_results.json").read_text())
    assert result["task"] == "classify" and result["sentences"] == 100
    model = transduce.load(classifier)
    found = model.classify("dog red cat")
    assert set(found["probabilities"]) == {"colour", "plain"}
    assert sum(found["probabilities"].values()) == pytest.approx(1, abs=1e-4)
    assert [r["label"] for r in model.classify(["a", "b"])] and len(model.classify(["a", "b"])) == 2
    assert main(["text", "predict", str(classifier), "owl fox", "blue owl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[1] for line in lines] == ["owl fox", "blue owl"]
    with pytest.raises(UserError, match="is a classify run: tag\\(\\) is for tag or entities"):
        model.tag("owl")


def test_a_tagger_and_an_entity_tagger_read_tags_at_each_words_first_subword(tmp_path, capsys):
    train_file, test_file = tagged(tmp_path / "train.conll", 300, 1), tagged(tmp_path / "t", 50, 2)
    run = train(tmp_path, "ent", "task=entities", "format=conll", f"train={train_file}")
    assert main(["text", "test", str(run), "--data", str(test_file)]) == 0
    out = capsys.readouterr().out
    assert "entities: precision" in out
    result = json.loads((run / "test_results.json").read_text())
    assert result["words"] == sum(len(b.splitlines()) for b in test_file.read_text().split("\n\n"))
    model = transduce.load(run)
    tags = model.tag("big fox red")
    assert [w for w, _ in tags] == ["big", "fox", "red"]
    for found in model.entities("big fox red"):
        assert set(found) == {"type", "text", "start", "end"}


def test_the_server_answers_with_the_runs_task_and_refuses_the_others(classifier):
    from fastapi.testclient import TestClient

    from transduce.api.describe import describe
    from transduce.serve.app import create_app

    model = transduce.load(classifier)
    with TestClient(create_app(model, describe(str(classifier), model))) as client:
        info = client.get("/info").json()
        assert info["family"] == "text" and info["kind"] == "classify"
        got = client.post("/classify", json={"texts": ["red cat", "cat"]}).json()["results"]
        assert len(got) == 2 and got[0]["label"] in ("colour", "plain")
        assert client.post("/classify", json={"texts": []}).status_code == 422
        assert client.post("/tag", json={"texts": ["x"]}).status_code == 404
        assert client.post("/translate", json={"sentences": ["x"]}).status_code == 404


@pytest.mark.parametrize(
    "body, settings, message",
    [
        ("colour\tred cat\njust words\n", [], r"train.tsv:2: expected label<TAB>text"),
        ("a\tb\n", ["task=tag"], r"format must be one of conll, conllu, not 'tsv'"),
        ("a\tb\n", ["pooling=max"], r"pooling must be one of cls, mean"),
        ("a\tb\n", ["max_tokens=600"], r"max_tokens=600 is beyond the positions"),
    ],
)
def test_bad_files_and_settings_are_one_line_errors_and_leave_no_run(
    tmp_path, capsys, body, settings, message
):
    path = tmp_path / "train.tsv"
    path.write_text(body, encoding="utf-8")
    run = tmp_path / "run"
    assert main(["text", "train", f"train={path}", *settings, *TINY, "--run-dir", str(run)]) == 2
    import re

    assert re.search(message, capsys.readouterr().err)
    assert not (run / "config.yaml").exists() and not (run / "spm.model").exists()


def test_a_validation_label_the_training_file_lacks_names_its_line(tmp_path, capsys):
    train_file = sentences(tmp_path / "train.tsv", 50, 1)
    valid = tmp_path / "valid.tsv"
    valid.write_text("colour\tred cat\nother\tfox\n", encoding="utf-8")
    argv = ["text", "train", f"train={train_file}", f"valid={valid}", *TINY]
    assert main([*argv, "--run-dir", str(tmp_path / "run")]) == 2
    assert "valid.tsv:2: label 'other' is not among the training file's" in capsys.readouterr().err
