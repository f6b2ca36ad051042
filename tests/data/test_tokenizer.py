import json
import random
import subprocess
import sys
from collections import Counter

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
    other = SubwordTokenizer.train(
        [english(n) for n in range(0, 3000, 3)], tmp_path / "other.model", 100
    )
    assert other.fingerprint != tokenizer.fingerprint
    assert SubwordTokenizer(tokenizer.path).fingerprint == tokenizer.fingerprint


def test_a_file_that_is_not_a_model(tmp_path):
    (tmp_path / "spm.model").write_text("hello")
    with pytest.raises(UserError, match="not a readable SentencePiece model"):
        SubwordTokenizer(tmp_path / "spm.model")


def test_bpe_dropout_segments_anew_but_reproducibly(tokenizer):
    texts = [english(n) for n in range(1, 4000, 37)]
    plain = tokenizer.encode(texts)
    corpus = tokenizer.dropout_corpus(texts)
    assert corpus.draw(0.0, seed=5) == plain  # our replay of the merges is SentencePiece's BPE
    drawn = corpus.draw(0.2, seed=5)
    assert drawn == corpus.draw(0.2, seed=5)  # a seed fixes the draw
    assert drawn != corpus.draw(0.2, seed=6)
    assert drawn != plain and sum(map(len, drawn)) > sum(map(len, plain))  # smaller pieces
    assert [tokenizer.decode(ids) for ids in drawn] == texts  # the same text, cut otherwise


def test_bpe_dropout_draws_alike_in_another_process(tokenizer):
    """SentencePiece's own sampler draws otherwise in each process for one seed; the
    processes of a distributed run and a resumed run must draw alike."""
    texts = [english(n) for n in range(1, 4000, 37)]
    code = (
        "import json, sys; from transduce.data.tokenizer import SubwordTokenizer; "
        "texts = json.loads(sys.stdin.read()); "
        f"print(json.dumps(SubwordTokenizer({str(tokenizer.path)!r})"
        ".dropout_corpus(texts).draw(0.2, seed=5)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(texts),
        text=True,
        capture_output=True,
        check=True,
    ).stdout
    assert json.loads(out) == tokenizer.dropout_corpus(texts).draw(0.2, seed=5)


def paper_bpe_dropout(tokenizer, word: str, p: float, rng: random.Random) -> tuple[str, ...]:
    """The paper's procedure written plainly: at every step each applicable merge is dropped
    with probability p, the best-scoring one left is made, and none left ends the word."""
    sp, symbols = tokenizer.sp, list(word)
    while True:
        left = [
            (sp.get_score(sp.piece_to_id(a + b)), -i)
            for i, (a, b) in enumerate(zip(symbols, symbols[1:]))
            if sp.piece_to_id(a + b) != sp.unk_id() and rng.random() >= p
        ]
        if not left:
            return tuple(symbols)
        i = -max(left)[1]
        symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]


def test_bpe_dropout_samples_the_papers_distribution(tokenizer):
    word, p, n = "▁seventy", 0.1, 4000
    rng = random.Random(1)
    paper = Counter(paper_bpe_dropout(tokenizer, word, p, rng) for _ in range(n))
    ours = Counter(
        tuple(tokenizer.sp.id_to_piece(ids))
        for ids in tokenizer.dropout_corpus([word[1:]] * n).draw(p, seed=1)
    )
    assert len(paper) > 10  # many segmentations
    # two samples of n from the paper's procedure differ by about 0.02 here
    total_variation = sum(abs(paper[k] - ours[k]) for k in paper.keys() | ours.keys()) / 2 / n
    assert total_variation < 0.06


def test_a_lowercasing_tokenizer_reads_every_casing_as_lowercase(tmp_path):
    texts = [english(n).capitalize() + "." for n in range(0, 3000, 7)]
    texts += [german(n).capitalize() + " Straße." for n in range(0, 3000, 7)]
    cased = SubwordTokenizer.train(texts, tmp_path / "cased.model", 150)
    lower = SubwordTokenizer.train(texts, tmp_path / "lower.model", 150, lowercase=True)
    assert not cased.lowercases and lower.lowercases
    assert SubwordTokenizer(lower.path).lowercases  # the rule travels in the model file
    assert cased.encode(["Three"]) != cased.encode(["three"])
    [ids] = lower.encode(["Three HUNDRED Straße."])
    assert lower.encode(["three hundred straße."]) == [ids]
    assert lower.decode(ids) == "three hundred straße."  # ß is kept, not folded to ss
    assert not any(c.isupper() for i in range(4, len(lower)) for c in lower.pieces([i])[0])
