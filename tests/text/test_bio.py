"""An entity tagger's words decoded under BIO's or IOBES's rules (transduce.tasks.text.bio)."""

import itertools
import math

import pytest
import torch

from transduce.evaluation.entities import spans
from transduce.tasks.text.bio import best_allowed, scheme_rules, training_rules

BIO = ["B-PER", "I-PER", "B-LOC", "I-LOC", "O"]
IOBES = ["B-PER", "I-PER", "E-PER", "S-PER", "O"]


def _allowed(tags: list[str], labels: list[str]) -> bool:
    rules = scheme_rules(labels)
    ids = [labels.index(t) for t in tags]
    return (
        bool(rules.start[ids[0]])
        and bool(rules.end[ids[-1]])
        and all(bool(rules.follows[a, b]) for a, b in zip(ids, ids[1:]))
    )


def test_bio_rules():
    assert _allowed(["B-PER", "I-PER", "O"], BIO)
    assert _allowed(["B-PER", "B-LOC", "I-LOC"], BIO)
    assert _allowed(["O", "B-PER"], BIO)  # BIO may end inside an entity
    assert not _allowed(["I-PER"], BIO)  # a lone I- at the start
    assert not _allowed(["O", "I-PER"], BIO)
    assert not _allowed(["B-LOC", "I-PER"], BIO)  # the type changes inside
    assert not _allowed(["B-PER", "O", "I-PER"], BIO)


def test_iobes_rules():
    assert _allowed(["B-PER", "I-PER", "E-PER", "S-PER", "O"], IOBES)
    assert not _allowed(["B-PER"], IOBES)  # left open at the end
    assert not _allowed(["B-PER", "O"], IOBES)  # closed without E-
    assert not _allowed(["O", "E-PER"], IOBES)
    assert not _allowed(["S-PER", "I-PER"], IOBES)


def _log_probs(rows: list[dict[str, float]], labels: list[str]) -> torch.Tensor:
    """Words' probabilities by tag (the rest of each row's mass spread over the others)."""
    out = []
    for row in rows:
        rest = (1 - sum(row.values())) / (len(labels) - len(row))
        out.append([math.log(row.get(t, rest)) for t in labels])
    return torch.tensor(out)


def test_a_lone_inside_tag_becomes_one_whole_entity_or_none():
    # word by word: O then I-PER, which conlleval reads as an entity of the second word only
    lp = _log_probs([{"O": 0.5, "B-PER": 0.4}, {"I-PER": 0.7, "O": 0.2}], BIO)
    assert [BIO[k] for k in lp.argmax(-1).tolist()] == ["O", "I-PER"]
    # O O = 0.5·0.2 = 0.10; B-PER I-PER = 0.4·0.7 = 0.28: both words are the person
    tags = [BIO[k] for k in best_allowed(lp, scheme_rules(BIO))]
    assert tags == ["B-PER", "I-PER"]
    assert spans(tags) == [("PER", 0, 1)]
    # with B-PER unlikely the allowed best is no entity: O O = 0.1 > B-PER I-PER = 0.056
    lp = _log_probs([{"O": 0.5, "B-PER": 0.08}, {"I-PER": 0.7, "O": 0.2}], BIO)
    assert [BIO[k] for k in best_allowed(lp, scheme_rules(BIO))] == ["O", "O"]


def test_a_type_switch_inside_is_mended():
    lp = _log_probs([{"B-LOC": 0.6, "B-PER": 0.3}, {"I-PER": 0.5, "I-LOC": 0.4}], BIO)
    # B-LOC I-LOC = 0.24 > B-PER I-PER = 0.15 (B-LOC I-PER, two entities, is not allowed)
    assert [BIO[k] for k in best_allowed(lp, scheme_rules(BIO))] == ["B-LOC", "I-LOC"]


@pytest.mark.parametrize("labels", [BIO, IOBES])
def test_the_best_allowed_sequence_of_every_small_case(labels):
    """Against every sequence of tags, scored by brute force."""
    rules = scheme_rules(labels)
    generator = torch.Generator().manual_seed(0)
    for words in (1, 2, 3, 4):
        for _ in range(20):
            lp = torch.randn(words, len(labels), generator=generator).log_softmax(-1)
            found = best_allowed(lp, rules)
            assert _allowed([labels[k] for k in found], labels)
            best = max(
                float(sum(lp[w, k] for w, k in enumerate(seq)))
                for seq in itertools.product(range(len(labels)), repeat=words)
                if _allowed([labels[k] for k in seq], labels)
            )
            assert float(sum(lp[w, k] for w, k in enumerate(found))) == pytest.approx(best)


def test_no_words():
    assert best_allowed(torch.zeros(0, len(BIO)), scheme_rules(BIO)) == []


def test_the_rules_hold_only_where_the_training_tags_keep_them():
    def ids(*sentences):
        return [[BIO.index(t) for t in s] for s in sentences]

    bio = ids(["B-PER", "I-PER", "O"], ["O", "B-LOC"], [])
    assert training_rules(BIO, bio) is not None
    iob1 = ids(["I-PER", "I-PER", "O"], ["O", "I-LOC", "B-LOC"])  # an entity starts at I-
    assert training_rules(BIO, bio + iob1) is None
    assert training_rules(BIO, bio + ids(["B-LOC", "I-PER"])) is None
