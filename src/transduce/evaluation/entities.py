"""Entity-level scores of BIO tags, by the conventions of CoNLL's conlleval script that
seqeval's default mode follows: an entity is a maximal run of one type that starts at its
``B-`` tag, or at an ``I-`` tag whose previous tag is ``O`` or of another type (a lone
``I-`` starts an entity rather than being dropped); it ends before the next ``B-``, ``O``
or tag of another type. ``E-`` and ``S-`` (IOBES) end and make single-token entities. A
predicted entity counts only when its type, start and end all match a true one.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

Span = tuple[str, int, int]  # type, first token, last token


def split_tag(tag: str) -> tuple[str, str]:
    """(prefix, type) of a tag: ("O", "") for O, ("B", "PER") for B-PER."""
    if tag == "O" or not tag:
        return "O", ""
    prefix, _, kind = tag.partition("-")
    if prefix not in ("B", "I", "E", "S") or not kind:
        raise ValueError(f"tag {tag!r} is not O or B-, I-, E-, S- and a type")
    return prefix, kind


def _ends(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """Whether an entity open at ``previous`` ends before ``current`` (conlleval)."""
    (p, pk), (c, ck) = previous, current
    return (
        p in ("E", "S")
        or (p != "O" and c in ("B", "S", "O"))
        or (p != "O" and c in ("I", "E") and pk != ck)
    )


def _starts(previous: tuple[str, str], current: tuple[str, str]) -> bool:
    """Whether ``current`` starts an entity after ``previous`` (conlleval)."""
    (p, pk), (c, ck) = previous, current
    return c in ("B", "S") or (c in ("I", "E") and (p in ("O", "E", "S") or pk != ck))


def spans(tags: Sequence[str]) -> list[Span]:
    """The entities of one sentence's tags, as (type, first, last) token positions."""
    found: list[Span] = []
    previous, start = ("O", ""), None
    for i, tag in enumerate([*tags, "O"]):  # an O closes the last entity
        current = split_tag(tag)
        if start is not None and _ends(previous, current):
            found.append((previous[1], start, i - 1))
            start = None
        if _starts(previous, current):
            start = i
        previous = current
    return found


def entity_scores(truth: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> dict:
    """Precision, recall and F1 (in percent) of ``predicted`` against ``truth``, sentence by
    sentence: ``micro`` over every entity and ``per_type`` for each type either side has,
    with the counts they come from. A sentence of another length than its truth is a
    ValueError naming it."""
    if len(truth) != len(predicted):
        raise ValueError(f"{len(predicted)} predicted sentences for {len(truth)} true ones")
    hits, true_count, predicted_count = Counter(), Counter(), Counter()
    for k, (gold, guess) in enumerate(zip(truth, predicted)):
        if len(gold) != len(guess):
            raise ValueError(
                f"sentence {k + 1}: {len(guess)} predicted tags for {len(gold)} tokens"
            )
        gold_spans, guess_spans = set(spans(gold)), set(spans(guess))
        for kind, _, _ in gold_spans:
            true_count[kind] += 1
        for kind, _, _ in guess_spans:
            predicted_count[kind] += 1
        for kind, _, _ in gold_spans & guess_spans:
            hits[kind] += 1
    kinds = sorted(set(true_count) | set(predicted_count))
    return {
        "micro": _prf(sum(hits.values()), sum(true_count.values()), sum(predicted_count.values())),
        "per_type": {k: _prf(hits[k], true_count[k], predicted_count[k]) for k in kinds},
    }


def _prf(hits: int, true: int, predicted: int) -> dict:
    precision = 100 * hits / predicted if predicted else 0.0
    recall = 100 * hits / true if true else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "true": true,
        "predicted": predicted,
        "correct": hits,
    }
