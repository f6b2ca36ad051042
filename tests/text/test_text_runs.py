"""`transduce text`: a classifier, a tagger and an entity tagger trained, tested, loaded,
predicting and served; bad files and settings refused in one line."""

import json
import shutil
from types import SimpleNamespace

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
from transduce import runs
from transduce.cli.main import main
from transduce.errors import UserError

TINY = TEXT_SETTINGS


def sentences(path, n, seed):
    return labelled_sentences(path, n, seed)


def tagged(path, n, seed):
    return tagged_sentences(path, n, seed)


def leaning(model, scores_by_tag):
    """A stand-in for ``model``'s network whose every position scores the tags as given."""
    real = model.model
    bias = torch.tensor([scores_by_tag[t] for t in model.labels])

    class Leaning(torch.nn.Module):
        per_token = True

        def __init__(self):
            super().__init__()
            self.real = real

        def forward(self, ids, chars=None, need_weights=False):
            out = real(ids, chars=chars, need_weights=need_weights)
            return SimpleNamespace(logits=torch.zeros_like(out.logits) + bias, weights=out.weights)

    return Leaning()


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    root = tmp_path_factory.mktemp("text")
    train_file = sentences(root / "train.tsv", 400, 1)
    test_file = sentences(root / "test.tsv", 100, 2)
    return train_text(root, "run", f"train={train_file}", f"test={test_file}", "pooling=mean")


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
    seen = model.attention("owl red fox")  # the pooled position (mean) over the subwords
    assert seen["rows"][0].startswith("mean → ") and seen["columns"][0] == "[CLS]"
    assert len(seen["weights"][0][0]) == len(seen["columns"])
    assert sum(seen["weights"][0][0]) == pytest.approx(1, abs=1e-3)  # a mean of softmax rows
    with pytest.raises(UserError, match="layer must be between 0 and 0, not 3"):
        model.attention("owl", layer=3)


def test_sentences_batched_by_length_get_what_they_get_alone_in_their_own_places(
    classifier, tmp_path
):
    """predict() and word_scores() batch neighbours by length (little padding); each
    sentence's result is the one it gets alone, at its own index."""
    from transduce.data.labelled import Sentences, Tagged
    from transduce.tasks.text.data import encode
    from transduce.tasks.text.task import by_length, predict, word_scores

    texts = ["owl red fox blue dog cat owl", "a", "red fox", "cat", "dog blue owl red", "fox"]
    model = transduce.load(classifier)
    found = Sentences(texts, ["plain"] * len(texts), list(range(1, 7)))
    encoded = encode(model.tokenizer, found, model.labels, 64, "mixed")
    batches = by_length(encoded, 4)
    assert sorted(i for b in batches for i in b) == list(range(6)) and batches[0] != [0, 1, 2, 3]
    batched, probabilities = predict(model.model, encoded, batch_size=4)
    alone = [
        predict(model.model, encode(model.tokenizer, found_one, model.labels, 64, "one"))
        for found_one in (Sentences([t], ["plain"], [1]) for t in texts)
    ]
    assert batched == [label for (labels, _) in alone for label in labels]
    for p, (_, one) in zip(probabilities, alone):
        assert p == pytest.approx(one[0], abs=1e-5)
    train_file = tagged(tmp_path / "train.conll", 100, 1)
    tagger = transduce.load(
        train_text(tmp_path, "tagger", "task=tag", "format=conll", f"train={train_file}")
    )
    words = [t.split() for t in texts]
    found = Tagged(words, [["O"] * len(w) for w in words], list(range(1, 7)))
    encoded = encode(tagger.tokenizer, found, tagger.labels, 64, "mixed")
    scores = word_scores(tagger.model, encoded, batch_size=4)
    for i, w in enumerate(words):
        one = encode(tagger.tokenizer, Tagged([w], [["O"] * len(w)], [1]), tagger.labels, 64, "")
        assert scores[i].shape[0] == len(w)
        assert torch.allclose(scores[i], word_scores(tagger.model, one)[0], atol=1e-5)


def test_a_tagger_and_an_entity_tagger_read_tags_at_each_words_first_subword(tmp_path, capsys):
    train_file, test_file = tagged(tmp_path / "train.conll", 300, 1), tagged(tmp_path / "t", 50, 2)
    settings = ["task=entities", "format=conll", f"train={train_file}", "calibrate=false"]
    run = train_text(tmp_path, "ent", *settings)
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
    # its words are decoded under BIO's rules: where I-ANIMAL wins word by word, a lone I-
    # cannot start the sentence, and B- I- I- (0.8 + 1.5 + 1.5) beats O O O (1 + 1 + 1)
    real, model.model = model.model, leaning(model, {"O": 1.0, "B-ANIMAL": 0.8, "I-ANIMAL": 1.5})
    assert [t for _, t in model.tag("big fox red")] == ["B-ANIMAL", "I-ANIMAL", "I-ANIMAL"]
    assert model.entities("big fox red") == [
        {"type": "ANIMAL", "text": "big fox red", "start": 0, "end": 2}
    ]
    assert model.attention("big fox red")["rows"][0] == "big (B-ANIMAL)"  # as tag() reads
    model.model = real
    # a sentence cut at max_tokens: the words past the cut are scored, as missed
    from transduce.data.labelled import Tagged
    from transduce.tasks.text.data import encode
    from transduce.tasks.text.task import predict, scores

    words = ["big", "fox"] * 6
    long = Tagged([words], [["B-ANIMAL", "I-ANIMAL"] * 6], [1])
    cut = encode(model.tokenizer, long, model.labels, 5, "long")
    assert len(cut.ids[0]) == 5 and len(cut.gold[0]) == 12
    predicted, _ = predict(model.model, cut)
    assert len(predicted[0]) < 12
    found = scores("entities", model.labels, cut, predicted)
    assert found["words"] == 12 and found["accuracy"] <= 100 * len(predicted[0]) / 12
    assert found["entities"]["micro"]["true"] == 6


def test_an_entity_tagger_decodes_with_the_bias_of_o_its_validation_chose(tmp_path):
    from transduce import runs
    from transduce.tasks.text.task import OUTSIDE_BIASES

    train_file = tagged(tmp_path / "train.conll", 300, 1)
    run = train_text(tmp_path, "ent", "task=entities", "format=conll", f"train={train_file}")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    checked = [r for r in rows if "val_f1" in r]
    assert checked and all(r["outside_bias"] in OUTSIDE_BIASES for r in checked)
    assert all(r["val_f1"] >= r["val_f1_unbiased"] for r in checked)
    best_path = run / "checkpoints" / "best.pt"
    state = runs.load_checkpoint(best_path, "text")
    best = max(checked, key=lambda r: r["val_f1"])  # the first of the best, as the engine keeps
    assert state["extra"]["outside_bias"] == best["outside_bias"]
    # the tagger decodes with its checkpoint's bias: where B- I- I- beats O O O by 0.8
    # (see the test above), O raised by 1 a word wins
    for bias, found in ((0.0, ["B-ANIMAL", "I-ANIMAL", "I-ANIMAL"]), (1.0, ["O", "O", "O"])):
        state["extra"]["outside_bias"] = bias
        runs.save_checkpoint(best_path, state)
        model = transduce.load(run)
        model.model = leaning(model, {"O": 1.0, "B-ANIMAL": 0.8, "I-ANIMAL": 1.5})
        assert [t for _, t in model.tag("big fox red")] == found, bias


def test_an_entity_tagger_trained_on_iob1_reads_its_tags_one_by_one(tmp_path):
    """IOB1 (CoNLL-2003's first release) starts an entity at I-: BIO's rules would forbid
    the tags it was trained on, so such a run reads each word's best tag."""
    iob1 = tmp_path / "iob1.conll"
    iob1.write_text(
        tagged(tmp_path / "bio.conll", 100, 1).read_text().replace("B-ANIMAL", "I-ANIMAL")
        + "\nbig\tI-ANIMAL\nfox\tI-ANIMAL\nowl\tB-ANIMAL\n"
    )
    run = train_text(tmp_path, "iob1", "task=entities", "format=conll", f"train={iob1}")
    model = transduce.load(run)
    model.model = leaning(model, {"O": 1.0, "B-ANIMAL": 0.8, "I-ANIMAL": 1.5})
    assert [t for _, t in model.tag("big fox red")] == ["I-ANIMAL", "I-ANIMAL", "I-ANIMAL"]
    assert [e["text"] for e in model.entities("big fox red")] == ["big fox red"]


@pytest.mark.parametrize(
    "piece, marks", [("first", [-100, 0, -100, 1]), ("last", [-100, -100, 0, 1])]
)
def test_a_words_tag_sits_at_the_subword_that_speaks_for_it(piece, marks):
    from types import SimpleNamespace

    from transduce.data.labelled import Tagged
    from transduce.tasks.text.data import encode

    pieces = {"walked": [7, 8], "on": [9]}  # walk + ed: the suffix is the last subword
    tokenizer = SimpleNamespace(bos_id=1, unk_id=3, encode=lambda words: [pieces[w] for w in words])
    found = Tagged([["walked", "on"]], [["VERB", "ADP"]], [1])
    encoded = encode(tokenizer, found, ["VERB", "ADP"], 16, "f", piece)
    assert encoded.ids == [[1, 7, 8, 9]] and encoded.labels == [marks]


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
        ("a\tb\n", ["pooling=last"], r"pooling must be one of cls, mean, max"),
        ("a\tb\n", ["piece=middle"], r"piece must be one of first, last"),
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


def test_masked_language_model_pretraining_then_fine_tuning_from_it(tmp_path, capsys):
    """task=mlm learns to restore hidden subwords of plain text; a classifier started from
    it (init=) reads its tokenizer and its encoder's weights."""
    import torch

    from transduce.tasks.text.task import masked

    ids = torch.tensor([[1, 5, 6, 7, 8, 9, 0, 0]] * 200)
    corrupted, target = masked(ids, 0.5, 4, 20, seed=3)
    chosen = target != -100
    assert not chosen[:, 0].any() and not chosen[:, 6:].any()  # never BOS or padding
    assert (target[chosen] == ids[chosen]).all()
    assert 0.4 < chosen.float().sum() / (200 * 5) < 0.6
    shares = [(corrupted[chosen] == 4).float().mean(), (corrupted[chosen] == ids[chosen]).float()]
    assert 0.7 < shares[0] < 0.9 and 0.05 < shares[1].mean() < 0.2  # 80% masked, ~10% kept
    assert (corrupted[~chosen] == ids[~chosen]).all()

    text = plain_sentences(tmp_path / "text.txt", 300, 5)
    pre = train_text(tmp_path, "pre", "task=mlm", "format=lines", f"train={text}")
    model = transduce.load(pre)
    assert model.describe().startswith("masked language model")
    with pytest.raises(UserError, match="fine-tune it with init=RUN"):
        model.classify("red cat")
    train_file = sentences(tmp_path / "train.tsv", 200, 1)
    tuned = train_text(tmp_path, "tuned", f"train={train_file}", f"init={pre}")
    assert (tuned / "spm.model").read_bytes() == (pre / "spm.model").read_bytes()
    start = torch.load(pre / "checkpoints" / "best.pt", map_location="cpu", weights_only=True)[
        "model"
    ]
    from transduce.tasks.text.task import build_text_model, load_init

    tuned_model = transduce.load(tuned)
    fresh = build_text_model(tuned_model.cfg, len(tuned_model.tokenizer), 2)
    begun = load_init(fresh, str(pre)).state_dict()  # where fine-tuning started
    for key in ("embed.embedding.weight", "encoder.layers.0.self_attn.q_proj.weight"):
        assert torch.equal(begun[key], start[key])
    # an encoder of other sizes cannot start from it: one line, naming the checkpoint
    argv = ["text", "train", f"train={train_file}", f"init={pre}", "d_model=48", *TINY[1:]]
    assert main([*argv, "--run-dir", str(tmp_path / "other")]) == 2
    assert "does not fit this run's model" in capsys.readouterr().err


def test_a_run_averaged_by_transduce_average_is_what_it_loads_and_tests(
    classifier, tmp_path, capsys, caplog
):
    run = tmp_path / "run"
    shutil.copytree(classifier, run)
    steps = runs.step_checkpoints(run)
    assert len(steps) >= 2, "the tiny run keeps too few checkpoints to average"
    assert main(["average", str(run), "--last", "2"]) == 0
    averaged = runs.load_checkpoint(run / "averaged.pt")["model"]
    best = runs.load_checkpoint(run / "checkpoints" / "best.pt")["model"]
    assert any(not torch.equal(averaged[k], best[k]) for k in averaged)
    loaded = transduce.load(run).model.state_dict()
    assert all(torch.equal(loaded[k], averaged[k]) for k in averaged)
    capsys.readouterr()
    with caplog.at_level("WARNING", logger="transduce"):
        assert main(["text", "test", str(run)]) == 0
    assert f"using {run / 'averaged.pt'}" in caplog.text
    one = transduce.load(run / "checkpoints" / "best.pt").model.state_dict()  # a file in it
    assert all(torch.equal(one[k], best[k]) for k in best)
    assert (run / "test_results.json").is_file()
