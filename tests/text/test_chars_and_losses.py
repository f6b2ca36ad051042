"""Text runs with a character model of each word (chars=), subwords hidden in training
(token_dropout=) and entity words weighed above O (outside_weight=): what each subword is
given, what the loss reads, runs that train, load and explain, and settings refused."""

import json
import re
from types import SimpleNamespace

import pytest
import torch

import transduce
from tests.helpers.text import TEXT_SETTINGS, labelled_sentences, tagged_sentences, train_text
from transduce.cli.main import main
from transduce.data.labelled import Sentences, Tagged
from transduce.data.tokenizer import SubwordTokenizer
from transduce.nn.chars import char_ids
from transduce.tasks.text.config import TextConfig
from transduce.tasks.text.data import Encoded, TextData, encode
from transduce.tasks.text.task import TextTask


@pytest.fixture(scope="module")
def lowercasing(tmp_path_factory):
    texts = ["the Red cat sat", "a dog ran on", "New York is big", "red owls fly"] * 20
    path = tmp_path_factory.mktemp("spm") / "spm.model"
    return SubwordTokenizer.train(texts, path, 40, "unigram", lowercase=True)


def test_each_subword_carries_its_words_letters_as_the_text_spells_them(lowercasing):
    text = "New  Yorker cats"
    [(ids, words)] = lowercasing.encode_words([text])
    assert ids == lowercasing.encode([text])[0]  # the same subwords as without letters
    assert len(words) == len(ids) and set(words) == {"New", "Yorker", "cats"}  # case kept
    assert words == sorted(words, key=text.split().index)  # in order, a word's run together
    found = Sentences([text], ["x"], [1])
    encoded = encode(lowercasing, found, ["x"], 64, "f", chars=True)
    assert encoded.chars[0][0] == (0,) * len(encoded.chars[0][0])  # BOS: no word
    assert [list(c) for c in encoded.chars[0][1:]] == [char_ids(w) for w in words]
    tagged = Tagged([["New", "Yorker"]], [["B", "I"]], [1])
    encoded = encode(lowercasing, tagged, ["B", "I"], 64, "f", chars=True)
    pieces = lowercasing.encode(["New", "Yorker"])
    spelled = [w for w, p in zip(["New", "Yorker"], pieces) for _ in p]
    assert [list(c) for c in encoded.chars[0][1:]] == [char_ids(w) for w in spelled]
    assert encode(lowercasing, tagged, ["B", "I"], 64, "f").chars == []  # not asked for


def task_of(tmp_path, **settings) -> TextTask:
    """A TextTask over three tagged words (O, B-X, I-X), a subword each."""
    cfg = TextConfig(task="entities", format="conll", train="t", **settings)
    encoded = Encoded([[1, 5, 6, 7]], [[-100, 0, 1, 2]], [["a", "b", "c"]])
    tokenizer = SimpleNamespace(unk_id=3, __len__=lambda: 10)
    data = TextData(tokenizer, ["O", "B-X", "I-X"], encoded, encoded)
    session = SimpleNamespace(device=torch.device("cpu"))
    return TextTask(cfg, data, session)


class Seen(torch.nn.Module):
    """A model that gives fixed logits and remembers the ids it was given."""

    def forward(self, ids, chars=None):
        self.ids = ids
        if ids is None or ids.shape[0] == 1:
            logits = torch.tensor([[[0.0, 0, 0], [2.0, 0, 0], [0.0, 1, 0], [1.0, 0, 3]]])
        else:
            logits = torch.zeros(*ids.shape, 3)
        return SimpleNamespace(logits=logits)


def test_outside_weight_weighs_o_words_in_the_loss(tmp_path):
    model = Seen()
    plain, n = task_of(tmp_path).loss(model, torch.tensor([0]))
    logits = model(None).logits[0, 1:]
    each = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2]), reduction="none")
    assert n == 3 and plain.item() == pytest.approx(each.sum().item(), rel=1e-6)
    weighed, _ = task_of(tmp_path, outside_weight=0.25).loss(model, torch.tensor([0]))
    assert weighed.item() == pytest.approx(0.25 * each[0].item() + each[1:].sum().item(), rel=1e-6)


def test_token_dropout_hides_real_subwords_behind_unk_and_never_bos_or_padding(tmp_path):
    model, hidden = Seen(), 0
    task = task_of(tmp_path, token_dropout=0.5)
    task.data.train = Encoded([[1, 5, 6, 7, 8, 9, 10]] * 64, [[-100] * 7] * 64, [])
    task.loss(model, torch.arange(64))
    ids = model.ids
    assert (ids[:, 0] == 1).all()  # BOS stays
    hidden = (ids[:, 1:] == 3).float().mean().item()
    assert 0.35 < hidden < 0.65
    kept = ids[:, 1:] != 3
    assert (ids[:, 1:][kept] == torch.tensor([5, 6, 7, 8, 9, 10]).expand(64, 6)[kept]).all()
    task_of(tmp_path).loss(model, torch.tensor([0]))
    assert not (model.ids == 3).any()  # none hidden without it


def test_a_tagger_with_letters_trains_loads_tags_and_explains(tmp_path, capsys):
    train = tagged_sentences(tmp_path / "train.conll", 200, 1)
    test = tagged_sentences(tmp_path / "test.conll", 30, 2)
    settings = ["task=entities", "format=conll", f"train={train}", f"test={test}", "chars=8"]
    settings += ["outside_weight=0.5", "token_dropout=0.1"]
    run = train_text(tmp_path, "run", *settings)
    assert main(["text", "test", str(run)]) == 0
    model = transduce.load(run)
    assert model.model.chars is not None
    assert [w for w, _ in model.tag("big Fox red")] == ["big", "Fox", "red"]
    seen = model.attention("big Fox red")
    assert len(seen["rows"]) == 3 and len(seen["weights"][0][0]) == len(seen["columns"])
    classify = labelled_sentences(tmp_path / "l.tsv", 100, 3)
    run = train_text(tmp_path, "cls", f"train={classify}", "chars=8", "pooling=max")
    model = transduce.load(run)
    assert model.classify("red  Cat")["label"] in ("colour", "plain")
    seen = model.attention("red Cat")  # max pooling: the rows its features came from
    assert seen["rows"][0].startswith("max → ")
    assert all(abs(sum(head[0]) - 1) < 1e-4 for head in seen["weights"])


@pytest.mark.parametrize(
    "settings, message",
    [
        (["task=mlm", "format=lines", "chars=8"], "chars is for the labelled tasks"),
        (["outside_weight=0.5"], "outside_weight is for task=entities"),
        (["task=entities", "format=conll", "outside_weight=0"], "outside_weight must be in"),
        (["token_dropout=1.5"], "token_dropout"),
        (["chars=-1"], "chars"),
        (["batch_tokens=-1"], "batch_tokens"),
        (["batch_tokens=20", "max_tokens=64"], "batch_tokens=20 is below max_tokens=64"),
    ],
)
def test_bad_settings_of_these_are_one_line_errors(tmp_path, capsys, settings, message):
    train = labelled_sentences(tmp_path / "t.tsv", 20, 1)
    run = tmp_path / "run"
    argv = ["text", "train", f"train={train}", *settings, *TEXT_SETTINGS, "--run-dir", str(run)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and len(err.strip().splitlines()) == 1, err
    assert not run.exists() or not (run / "config.yaml").exists()


def test_batch_tokens_groups_sentences_of_similar_length_and_every_one_once(tmp_path):
    lengths = [2 + (7 * i) % 40 for i in range(300)]  # 2 to 41 subwords, mixed
    task = task_of(tmp_path, batch_tokens=96, max_tokens=64)
    task.data.train = Encoded([[1] * n for n in lengths], [[-100] * n for n in lengths], [])
    batches = [b.tolist() for b in task.batches(0)]

    def padded(batch):  # the subwords a batch holds, padded to its longest sentence
        return max(lengths[i] for i in batch) * len(batch)

    assert sorted(i for b in batches for i in b) == list(range(300))  # each once
    assert max(padded(b) for b in batches) <= 96
    assert sum(lengths) / sum(padded(b) for b in batches) > 0.9  # little padding
    assert [b.tolist() for b in task.batches(0)] == batches  # by seed and epoch alone
    assert [b.tolist() for b in task.batches(1)] != batches
    plain = task_of(tmp_path, max_tokens=64)  # batch_size sentences drawn at random
    plain.data.train = task.data.train
    drawn = [b.tolist() for b in plain.batches(0)]
    assert {len(b) for b in drawn[:-1]} == {32}
    assert sum(lengths) / sum(padded(b) for b in drawn) < 0.7


def test_a_tagger_trains_on_batches_by_length(tmp_path):
    from transduce.data.batching import token_batches
    from transduce.data.labelled import read_tagged
    from transduce.tasks.text.data import encode

    train = tagged_sentences(tmp_path / "train.conll", 200, 1)
    run = train_text(tmp_path, "run", "task=entities", "format=conll", f"train={train}",
                     "valid_share=0", f"valid={train}", "batch_tokens=200")  # fmt: skip
    model = transduce.load(run)
    assert [t for _, t in model.tag("big fox red")] == ["B-ANIMAL", "I-ANIMAL", "O"]
    encoded = encode(model.tokenizer, read_tagged(train, "conll"), model.labels, 128, "t")
    expected = len(token_batches([len(ids) for ids in encoded.ids], 200))
    first = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert first["epoch"] == 1 and first["step"] == expected < 200 // 16  # fewer, fuller


def test_a_batch_pads_each_sentences_ids_tags_and_letters_as_written_out_by_hand():
    """batch_of pads ids with 0, tags with IGNORE and letters with 0 to the longest
    sentence, rows in the order asked for; labels of a sentence stay one a row."""
    from transduce.tasks.text.task import batch_of

    a, b = (1,) * 24, (2,) * 24
    encoded = Encoded(
        [[1, 5, 6], [1, 7], [1, 8, 9, 4]],
        [[-100, 0, 1], [-100, 2], [-100, 1, -100, 0]],
        [["x", "y"], ["z"], ["u", "v"]],
        chars=[[(0,) * 24, a, b], [(0,) * 24, b], [(0,) * 24, a, a, b]],
    )
    ids, tags, chars = batch_of(encoded, [1, 2, 0], True)
    assert ids.tolist() == [[1, 7, 0, 0], [1, 8, 9, 4], [1, 5, 6, 0]]
    assert tags.tolist() == [[-100, 2, -100, -100], [-100, 1, -100, 0], [-100, 0, 1, -100]]
    assert chars.shape == (3, 4, 24) and chars.dtype == torch.long
    assert chars[0, :, 0].tolist() == [0, 2, 0, 0]
    assert chars[1, :, 0].tolist() == [0, 1, 1, 2]
    assert chars[2, :, 5].tolist() == [0, 1, 2, 0]
    encoded.ids.append([1, 4])  # a sentence added after a batch was made is seen
    encoded.labels.append([-100, 2])
    encoded.chars.append([(0,) * 24, b])
    ids, tags, _ = batch_of(encoded, [3], True)
    assert ids.tolist() == [[1, 4]] and tags.tolist() == [[-100, 2]]
    sentences = Encoded([[1, 5, 6], [1, 7]], [2, 0], [])
    ids, labels, chars = batch_of(sentences, [1, 0], False)
    assert ids.tolist() == [[1, 7, 0], [1, 5, 6]] and labels.tolist() == [0, 2]
    assert chars is None
