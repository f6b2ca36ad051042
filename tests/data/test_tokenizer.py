import pytest

from transduce.data.numbers import english, german
from transduce.data.tokenizer import SubwordTokenizer
from transduce.errors import UserError


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    texts = [english(n) for n in range(0, 5000, 7)] + [german(n) for n in range(0, 5000, 7)]
    return SubwordTokenizer.train(texts, tmp_path_factory.mktemp("spm") / "spm.model", 150)


def test_special_ids_and_round_trip(tokenizer):
    assert (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id) == (0, 1, 2, 3)
    [ids] = tokenizer.encode(["three hundred twenty-one"])
    assert min(ids) > 3 and len(tokenizer) <= 150
    assert tokenizer.decode(ids + [tokenizer.eos_id, 9, 9]) == "three hundred twenty-one"
    [ids] = tokenizer.encode(["dreihunderteinundzwanzig"])
    assert tokenizer.decode([tokenizer.bos_id] + ids) == "dreihunderteinundzwanzig"


def test_fingerprint_tells_models_apart(tokenizer, tmp_path):
    other = SubwordTokenizer.train([english(n) for n in range(0, 3000, 3)],
                                   tmp_path / "other.model", 100)
    assert other.fingerprint != tokenizer.fingerprint
    assert SubwordTokenizer(tokenizer.path).fingerprint == tokenizer.fingerprint


def test_a_file_that_is_not_a_model(tmp_path):
    (tmp_path / "spm.model").write_text("hello")
    with pytest.raises(UserError, match="not a readable SentencePiece model"):
        SubwordTokenizer(tmp_path / "spm.model")


def test_bpe_dropout_segments_anew_but_reproducibly(tokenizer):
    texts = [english(n) for n in range(1, 4000, 37)]
    plain = tokenizer.encode(texts)
    assert tokenizer.sample(texts, 0.0, seed=5) == plain
    drawn = tokenizer.sample(texts, 0.2, seed=5)
    assert drawn == tokenizer.sample(texts, 0.2, seed=5)  # a seed fixes the draw
    assert drawn != tokenizer.sample(texts, 0.2, seed=6)
    assert drawn != plain and sum(map(len, drawn)) > sum(map(len, plain))  # smaller pieces
    assert [tokenizer.decode(ids) for ids in drawn] == texts  # the same text, cut otherwise
