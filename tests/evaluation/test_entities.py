"""Entity spans and their scores, by conlleval's conventions (seqeval's default mode),
against cases computed by hand."""

import pytest

from transduce.evaluation.entities import entity_scores, spans


def test_spans_of_bio_tags():
    tags = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "O", "B-ORG"]
    assert spans(tags) == [("PER", 0, 1), ("LOC", 3, 3), ("LOC", 4, 5), ("ORG", 7, 7)]


def test_a_lone_inside_tag_starts_an_entity_and_a_type_change_splits_one():
    # conlleval (and seqeval's default mode) keep a lone I- as an entity's start
    assert spans(["O", "I-PER", "I-PER", "O"]) == [("PER", 1, 2)]
    # I- of another type ends the entity before it and starts its own
    assert spans(["B-PER", "I-LOC", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 2)]
    assert spans(["I-PER"]) == [("PER", 0, 0)]


def test_iobes_tags_end_and_make_single_token_entities():
    assert spans(["B-PER", "E-PER", "S-LOC", "O"]) == [("PER", 0, 1), ("LOC", 2, 2)]


def test_scores_count_only_exact_type_and_boundaries():
    truth = [["B-PER", "I-PER", "O", "B-LOC", "O", "B-ORG", "I-ORG"]]
    predicted = [
        [
            "B-PER",  # PER 0-1: right
            "I-PER",
            "O",
            "B-ORG",  # LOC 3 predicted as ORG: a wrong type
            "O",
            "B-ORG",  # ORG 5-6 predicted as 5-5: a wrong boundary
            "O",
        ]
    ]
    scores = entity_scores(truth, predicted)
    micro = scores["micro"]
    assert (micro["correct"], micro["true"], micro["predicted"]) == (1, 3, 3)
    assert micro["precision"] == pytest.approx(100 / 3) and micro["f1"] == pytest.approx(100 / 3)
    per = scores["per_type"]
    assert per["PER"]["f1"] == 100.0
    assert (per["LOC"]["recall"], per["LOC"]["predicted"]) == (0.0, 0)
    assert (per["ORG"]["true"], per["ORG"]["predicted"], per["ORG"]["correct"]) == (1, 2, 0)


def test_seqevals_documented_example():
    """seqeval's README: one MISC entity a token too early, one PER right: F1 0.50."""
    truth = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    predicted = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    assert entity_scores(truth, predicted)["micro"]["f1"] == pytest.approx(50.0)


def test_no_prediction_scores_zero_and_bad_input_is_refused():
    assert entity_scores([["B-PER"]], [["O"]])["micro"]["f1"] == 0.0
    with pytest.raises(ValueError, match="sentence 1: 1 predicted tags for 2 tokens"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="'X-PER' is not O or B-, I-, E-, S-"):
        spans(["X-PER"])
